/**
 * A reload (SIGHUP, POST /-/reload): the config is resolved again from the same flags and
 * environment and the re-read file, with the same schema as at startup. What can change
 * live is applied by the metrics side (side.ts); the rest is named, and keeps its value
 * until a restart.
 */
import { OPTIONS, flagName, resolveConfig, type Config } from '../config.js';
import type { BucketSet } from '../lib/metric-def.js';
import type { LiveSettings } from '../side/side.js';


export const LIVE_KEYS = ['slos', 'models', 'modelsRefresh', 'logLevel', 'tenantLimit'] as const satisfies readonly (keyof Config)[];

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
  const live: LiveSettings = { slos: next.slos, models: next.models, modelsRefresh: next.modelsRefresh, logLevel: next.logLevel, tenantLimit: next.tenantLimit };
  return { ok: true, next, live, restartNeeded: restartNeeded(current, next), bucketsKept: bucketsKept(current, next) };
}

/** Flags whose new value differs but takes a restart (listeners, upstream, workers, TLS, timeouts, ...). */
export function restartNeeded(a: Config, b: Config): string[] {
  const live = new Set<string>(LIVE_KEYS);
  const flags = OPTIONS.filter((o) => !live.has(o.key) && JSON.stringify(a[o.key]) !== JSON.stringify(b[o.key])).map(flagName);
  // The upstream list (issue 26) is restart-only too: pools, collectors and labels are built from it once.
  if (JSON.stringify(a.upstreams) !== JSON.stringify(b.upstreams) && !flags.includes('--upstream')) flags.push('upstreams');
  return flags;
}

/**
 * Histogram boundaries are fixed for the life of the process: inserting a new SLO threshold
 * as a bucket would change a series' `le` set under Prometheus (a bucket appearing mid-life
 * breaks rate() and histogram_quantile() over that range). The exact SLO counters switch
 * to the new thresholds at once; the buckets follow at the next restart. Returns the bucket
 * sets whose boundaries would differ, as "set: boundaries" for the log.
 */
export function bucketsKept(a: Config, b: Config): string[] {
  const out: string[] = [];
  for (const set of Object.keys(a.buckets) as BucketSet[]) {
    const missing = b.buckets[set]!.filter((x) => !a.buckets[set]!.includes(x));
    const gone = a.buckets[set]!.filter((x) => !b.buckets[set]!.includes(x));
    if (missing.length > 0 || gone.length > 0) out.push(`${set}: ${missing.length ? `+${missing.join(',')}` : ''}${gone.length ? ` -${gone.join(',')}` : ''}`.trim());
  }
  return out;
}
