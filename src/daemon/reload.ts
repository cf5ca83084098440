/**
 * A reload (SIGHUP, POST /-/reload) is resolved here, once, whoever asked for it: the config is
 * resolved again from the same flags and environment and the re-read file, with the same schema
 * as at startup, and the web config file is read again. Only the plan travels to the metrics
 * side (side/reload.ts): the live settings (metrics/live.ts), the restart-only flags that
 * changed, the histogram buckets kept. The running config is held by the process that owns
 * the flag table (daemon/metrics-thread.ts), so a second reload compares against the first.
 */
import { OPTIONS, flagName, resolveConfig, type Config } from '../config.js';
import type { BucketSet } from '../lib/metric-def.js';
import { loadWebConfig } from '../lib/web-config.js';
import { LIVE_KEYS, liveOf, type LiveSettings } from '../metrics/live.js';
import type { ReloadPlan } from '../side/side.js';

/** Every live key is a key of Config, of the same type (the compiler checks it here). */
const liveKeysAreConfigKeys: readonly (keyof Config)[] = LIVE_KEYS;
void liveKeysAreConfigKeys;

export type ReloadOutcome =
  | { ok: true; next: Config; live: LiveSettings; restartNeeded: string[]; bucketsKept: string[] }
  | { ok: false; error: string };

/** Resolves `current` again; never throws (a bad file is an outcome, and the running config stays). */
export function reresolve(current: Config): ReloadOutcome {
  let next: Config;
  try {
    next = resolveConfig(current.sources.cli, current.sources.env);
  } catch (err) {
    return { ok: false, error: (err as Error).message };
  }
  return { ok: true, next, live: liveOf(next), restartNeeded: restartNeeded(current, next), bucketsKept: bucketsKept(current, next) };
}

/**
 * The running config and how to reload it. A reload that succeeds moves the live settings of
 * the running config; the rest keeps its startup value (named as restart-only each time).
 */
export class Reloader {
  constructor(private current: Config) {}

  /** The plan for the metrics side: the config resolved again, and the web config file read again. */
  plan(): ReloadPlan {
    const r = reresolve(this.current);
    if (!r.ok) return r;
    let web;
    try {
      if (this.current.webConfigFile) web = loadWebConfig(this.current.webConfigFile);
    } catch (err) {
      return { ok: false, error: (err as Error).message };
    }
    this.current = { ...this.current, ...r.live };
    return { ok: true, live: r.live, restartNeeded: r.restartNeeded, bucketsKept: r.bucketsKept, ...(web ? { web } : {}) };
  }
}

/** Flags whose new value differs but takes a restart (listeners, upstream, workers, TLS, timeouts, ...). */
export function restartNeeded(a: Config, b: Config): string[] {
  const live = new Set<string>(LIVE_KEYS);
  const flags = OPTIONS.filter((o) => !live.has(o.key) && JSON.stringify(a[o.key]) !== JSON.stringify(b[o.key])).map(flagName);
  // The upstream list is restart-only too: pools, collectors and labels are built from it once.
  if (JSON.stringify(a.upstreams) !== JSON.stringify(b.upstreams) && !flags.includes('--upstream')) flags.push('upstreams');
  return flags;
}

/**
 * Histogram boundaries are fixed for the life of the process: inserting a new SLO threshold
 * as a bucket would change a series' `le` set under Prometheus (a bucket appearing mid-life
 * breaks rate() and histogram_quantile() over that range). The exact SLO counters switch
 * to the new thresholds at once; the buckets follow at the next restart. Returns the bucket
 * sets whose boundaries would differ, in words for the log ("ttft: 0.003 added at restart").
 */
export function bucketsKept(a: Config, b: Config): string[] {
  const out: string[] = [];
  for (const set of Object.keys(a.buckets) as BucketSet[]) {
    const missing = b.buckets[set]!.filter((x) => !a.buckets[set]!.includes(x));
    const gone = a.buckets[set]!.filter((x) => !b.buckets[set]!.includes(x));
    const words = [missing.length ? `${missing.join(', ')} added at restart` : '', gone.length ? `${gone.join(', ')} kept until restart` : ''].filter(Boolean);
    if (words.length > 0) out.push(`${set}: ${words.join('; ')}`);
  }
  return out;
}
