/**
 * The prefix-cache model's window and what it shows (live.ts feeds it): sums per time bucket
 * of --prefix-cache-window, the rows of /api/v1/status, and a model's ratios over its
 * upstreams. Pure.
 */
import type { PrefixVerdict, ReuseRatios } from './verdict.js';

/** The window's time buckets. */
export const WINDOW_BUCKETS = 30;

/** Sums over one bucket of the window. */
export interface Bucket {
  start: number;
  requests: number;
  prompt: number;
  unbounded: number;
  /** Prompt tokens and hits of requests modelled while the engine's size was known. */
  sizedPrompt: number;
  sized: number;
  /** Requests whose usage reported cached_tokens: their prompt tokens and cached tokens. */
  usagePrompt: number;
  usageCached: number;
}

export const emptyBucket = (start: number): Bucket => ({ start, requests: 0, prompt: 0, unbounded: 0, sizedPrompt: 0, sized: 0, usagePrompt: 0, usageCached: 0 });

/** The bucket of `buckets` that `atMs` falls in (made if new; buckets older than the window dropped). */
export function bucketAt(windowMs: number, now: number, c: { buckets: Bucket[] }, atMs: number): Bucket {
  const width = windowMs / WINDOW_BUCKETS;
  const start = Math.floor(atMs / width) * width;
  let b = c.buckets.find((x) => x.start === start);
  if (!b) {
    b = emptyBucket(start);
    c.buckets.push(b);
    c.buckets.sort((x, y) => x.start - y.start);
    const oldest = now - windowMs - width;
    while (c.buckets.length > 0 && c.buckets[0]!.start < oldest) c.buckets.shift();
  }
  return b;
}

/** The sums of the buckets that end after `since`. */
export function sumSince(windowMs: number, buckets: readonly Bucket[], since: number): Bucket {
  const sum = emptyBucket(0);
  for (const b of buckets) {
    if (b.start + windowMs / WINDOW_BUCKETS <= since) continue;
    for (const k of ['requests', 'prompt', 'unbounded', 'sizedPrompt', 'sized', 'usagePrompt', 'usageCached'] as const) sum[k] += b[k];
  }
  return sum;
}

/** One model on one upstream, as /api/v1/status shows it. */
export interface PrefixCacheRow {
  upstream: string;
  requests: number;
  promptTokens: number;
  unbounded: number | null;
  engineSize: number | null;
  engine: number | null;
  /** Where `engine` comes from: the requests' usage, the engine's counters (all its models), or nowhere. */
  engineFrom: 'usage' | 'engine_counters' | null;
  blockSize: number;
  /** The cache size modelled, in tokens; null: not known (no engine_size figure). */
  cacheTokens: number | null;
  prefixCaching: boolean | null;
}

export interface PrefixCacheStatus {
  windowSeconds: number;
  /** Upstreams whose modelled caches serve the model (a cache of each one's size). */
  replicas: number;
  /** Reuse under prefix-affine routing over those replicas; null: one replica, or their block sizes differ. */
  affine: number | null;
  /** Share of requests the model hashed since start: below 1 when sampled or shed under load. */
  keptShare: number;
  upstreams: PrefixCacheRow[];
  verdict: PrefixVerdict | null;
}

/** A model's ratios over its upstreams, weighted by their prompt tokens. */
export function combine(rows: readonly PrefixCacheRow[]): ReuseRatios {
  const mean = (f: (r: PrefixCacheRow) => number | null) => {
    let w = 0;
    let s = 0;
    for (const r of rows) {
      const v = f(r);
      if (v === null || r.promptTokens <= 0) continue;
      w += r.promptTokens;
      s += v * r.promptTokens;
    }
    return w > 0 ? s / w : null;
  };
  const said = rows.map((r) => r.prefixCaching).filter((v): v is boolean => v !== null);
  return {
    requests: rows.reduce((n, r) => n + r.requests, 0),
    unbounded: mean((r) => r.unbounded), engineSize: mean((r) => r.engineSize), affine: null, engine: mean((r) => r.engine),
    prefixCaching: said.length === 0 ? null : said.some((v) => v),
  };
}
