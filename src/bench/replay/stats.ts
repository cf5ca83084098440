/**
 * What a workload trace holds, before anyone replays it (`infermeter trace stats`): the
 * arrival rate over time, the length distributions, the API and model mix, and the share of
 * prompt tokens a prefix cache would find already computed.
 *
 * Prefix reuse is asked of cache models (src/metrics/prefix/model.ts), one row each, fed the
 * requests in arrival order: a request's hit is its leading run of blocks the cache holds (an
 * engine's prefix cache matches prefixes, never a block after a miss). The unbounded cache
 * keeps every block it has seen: the most any cache could reuse. `engineSizeCache` holds as
 * many blocks as an engine's KV cache, least recently used out, each request holding its
 * blocks from its arrival until its recorded end (`e2e_ms`). Both count in the trace's blocks,
 * a partial last block included, so the two rows differ by the cache's size alone.
 */
import { distribution, type Distribution } from '../stats.js';
import { spreadOf } from '../../metrics/prefix/model.js';
import { sizedCache, unboundedCache, type BlockRef, type RequestSpan, type ReuseModel } from '../../metrics/prefix/reuse.js';
import type { ReplayRequest, Workload } from './workload.js';

export type { BlockRef, RequestSpan, ReuseModel } from '../../metrics/prefix/reuse.js';
export { unboundedCache } from '../../metrics/prefix/reuse.js';

/**
 * A cache of an engine's size: `blocks` of `blockTokens` tokens (vLLM's num_gpu_blocks and
 * block_size), as many of the trace's `traceBlockTokens`-token blocks as fit in as many tokens.
 */
export function engineSizeCache(o: { blocks: number; blockTokens: number; traceBlockTokens: number; upstream?: string; from?: string }): ReuseModel {
  const traceBlocks = Math.floor((o.blocks * o.blockTokens) / o.traceBlockTokens);
  if (traceBlocks < 1) throw new Error(`${o.blocks} blocks of ${o.blockTokens} tokens hold less than one of the trace's ${o.traceBlockTokens}-token blocks`);
  const whose = o.upstream === undefined ? '' : `${o.upstream}'s requests through `;
  const m = sizedCache(traceBlocks, `${whose}${o.blocks.toLocaleString('en')} blocks of ${o.blockTokens} tokens (${traceBlocks.toLocaleString('en')} of the trace's ${o.traceBlockTokens}${o.from ? `; ${o.from}` : ''}), least recently used out, each request holding its blocks until its recorded end`);
  return o.upstream === undefined ? m : { name: `engine size (${o.upstream})`, description: m.description, upstream: o.upstream, admit: (b, span) => m.admit(b, span) };
}

/** The blocks of one request's prompt: its hash ids, the last one partial when the trace says so (Mooncake's ceil). */
export function blocksOf(r: Pick<ReplayRequest, 'namespace' | 'blockSize'> & { record: Pick<ReplayRequest['record'], 'inputLength' | 'hashIds'> }): BlockRef[] {
  const ids = r.record.hashIds;
  return ids.map((id, i) => ({
    key: `${r.namespace}:${id}`,
    spread: spreadOf(id, r.namespace),
    tokens: i === ids.length - 1 ? Math.min(r.blockSize, r.record.inputLength - i * r.blockSize) : r.blockSize,
  }));
}

export interface ReuseFigure {
  model: string;
  description: string;
  hitTokens: number;
  promptTokens: number;
  /** hitTokens / promptTokens: the share of prompt tokens found cached. */
  share: number | null;
  /** Requests with at least one block hit. */
  requestsHit: number;
  /** Share of blocks the model tracked: below 1 when it sampled to stay within its memory cap (the figure is then an estimate). */
  rate: number;
}

export interface RateBucket {
  /** Seconds since the trace began. */
  start: number;
  requests: number;
  requestsPerSecond: number;
  inputTokensPerSecond: number;
}

export interface TraceStats {
  files: { path: string; requests: number; blockSize: number; blockSizeFrom: string; cut: string | null; sampling: number | null; startTime: string | null; version: string | null }[];
  requests: number;
  /** First to last arrival. */
  spanSeconds: number;
  /** (requests − 1) / span: arrivals per second; null for one request. */
  arrivalRate: number | null;
  bucketSeconds: number;
  rate: RateBucket[];
  inputTokens: Distribution;
  outputTokens: Distribution;
  /** Requests per power-of-two length bucket ("≤ 512": count), both lengths. */
  lengthHistogram: { upTo: number; input: number; output: number }[];
  api: Record<string, number>;
  model: Record<string, number>;
  stream: Record<string, number>;
  outcome: Record<string, number>;
  reuse: ReuseFigure[];
}

/** The bucket a time falls in; the epsilon keeps 0.6 / 0.1 in bucket 6, where decimal arithmetic puts it. */
export function bucketOf(seconds: number, width: number): number {
  return Math.floor(seconds / width + 1e-9);
}

/** A bucket width that gives about 20 rows: 1, 2, 5 × a power of ten seconds. */
export function niceBucket(spanSeconds: number): number {
  const raw = Math.max(spanSeconds / 20, 1e-3);
  const p = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 5, 10].map((m) => m * p).find((b) => b >= raw)!;
}

export function traceStats(w: Workload, opts: { bucketSeconds?: number; models?: readonly ReuseModel[] } = {}): TraceStats {
  const reqs = w.requests;
  const spanSeconds = reqs.length ? reqs[reqs.length - 1]!.atMs / 1000 : 0;
  const bucketSeconds = opts.bucketSeconds ?? niceBucket(spanSeconds);
  const rate: RateBucket[] = Array.from({ length: reqs.length ? bucketOf(spanSeconds, bucketSeconds) + 1 : 0 }, (_, i) => ({
    start: round(i * bucketSeconds), requests: 0, requestsPerSecond: 0, inputTokensPerSecond: 0,
  }));
  for (const r of reqs) {
    const b = rate[bucketOf(r.atMs / 1000, bucketSeconds)]!;
    b.requests++;
    b.requestsPerSecond += 1 / bucketSeconds;
    b.inputTokensPerSecond += r.record.inputLength / bucketSeconds;
  }
  const models = opts.models ?? [unboundedCache()];
  const reuse = models.map((m) => ({ model: m, hit: 0, prompt: 0, requestsHit: 0 }));
  for (const r of reqs) {
    const blocks = blocksOf(r);
    const e2e = r.record.e2eMs;
    const span: RequestSpan = { atMs: r.atMs, endMs: e2e === null ? null : r.atMs + e2e, inputTokens: r.record.inputLength, outputTokens: r.record.outputLength, blockSize: r.blockSize };
    for (const x of reuse) {
      if (x.model.upstream !== undefined && x.model.upstream !== r.record.upstream) continue;
      const hit = x.model.admit(blocks, span);
      x.hit += hit;
      x.prompt += r.record.inputLength;
      if (hit > 0) x.requestsHit++;
    }
  }
  return {
    files: w.files.map((f) => ({
      path: f.path, requests: f.records.length, blockSize: f.meta.blockSize, blockSizeFrom: f.meta.from, cut: f.meta.cut, sampling: f.meta.sampling,
      startTime: f.meta.startUnixMs === null ? null : new Date(f.meta.startUnixMs).toISOString(), version: f.meta.version,
    })),
    requests: reqs.length,
    spanSeconds,
    arrivalRate: reqs.length > 1 && spanSeconds > 0 ? (reqs.length - 1) / spanSeconds : null,
    bucketSeconds,
    rate,
    inputTokens: distribution(reqs.map((r) => r.record.inputLength)),
    outputTokens: distribution(reqs.map((r) => r.record.outputLength)),
    lengthHistogram: histogram(reqs),
    api: tally(reqs.map((r) => r.record.api ?? `${r.api} (not recorded)`)),
    model: tally(reqs.map((r) => r.record.model ?? '(not recorded)')),
    stream: tally(reqs.map((r) => (r.record.stream === null ? `${r.stream} (not recorded)` : String(r.record.stream)))),
    outcome: tally(reqs.map((r) => r.record.outcome ?? '(not recorded)')),
    reuse: reuse.map((x) => ({
      model: x.model.name, description: x.model.description, hitTokens: Math.round(x.hit), promptTokens: x.prompt,
      share: x.prompt > 0 ? x.hit / x.prompt : null, requestsHit: x.requestsHit, rate: x.model.rate ?? 1,
    })),
  };
}

function histogram(reqs: readonly ReplayRequest[]): TraceStats['lengthHistogram'] {
  const top = reqs.reduce((m, r) => Math.max(m, r.record.inputLength, r.record.outputLength), 1);
  const out: TraceStats['lengthHistogram'] = [];
  for (let upTo = 16; ; upTo *= 2) {
    out.push({ upTo, input: 0, output: 0 });
    if (upTo >= top) break;
  }
  // Power-of-two rows from 16: a length falls in the first row whose bound holds it (0 and 1–16 in the first).
  const row = (n: number) => Math.max(0, Math.ceil(Math.log2(Math.max(n, 1) / 16)));
  for (const r of reqs) {
    out[row(r.record.inputLength)]!.input++;
    out[row(r.record.outputLength)]!.output++;
  }
  return out;
}

function tally(values: readonly string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const v of values) out[v] = (out[v] ?? 0) + 1;
  return Object.fromEntries(Object.entries(out).sort((a, b) => b[1] - a[1]));
}

function round(x: number): number {
  return Number(x.toFixed(6));
}
