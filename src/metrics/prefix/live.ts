/**
 * The live prefix-cache model (docs/prefix-cache.md): a reader of the prompt block hashing
 * (metrics/prompt/blocks.ts) and of the machine snapshot. For each model and upstream, over
 * --prefix-cache-window, three shares of prompt tokens:
 *
 * - `unbounded`: in blocks a request in the window already had (every block kept: what the
 *   traffic holds);
 * - `engine_size`: found cached in a cache of the engine's size, least recently used out,
 *   each request holding its blocks while it runs (one cache per upstream, as the engine has);
 * - `engine`: what the engine says it reused: the requests' usage `cached_tokens` where the
 *   engine reports them, else its prefix-cache counters over the window (vLLM, SGLang,
 *   llama.cpp), shared by the models it serves.
 *
 * Blocks are cut at the engine's own block size where it reports one (vLLM's
 * cache_config_info; collectors/engine/cache-config.ts), else --prefix-cache-block-size.
 * Records reach it when their request ended, in any order; it models them in start order
 * after LAG_MS (a request that ended later is modelled when it comes, as arriving then).
 * Hashes only, in memory: the unbounded set per model is capped (UNBOUNDED_CAP blocks, sampled
 * beyond), the sized cache holds the engine's block count, the buffer MAX_PENDING requests.
 */
import { Counter, type Gauge, type Registry } from 'prom-client';
import type { Logger } from 'pino';
import { commonUnit, fullBlockIds } from '../../lib/block-hash.js';
import { gauge } from '../../lib/metric-def.js';
import type { UpstreamSpec } from '../../lib/upstream-spec.js';
import type { EngineReading, MachineReader } from '../../collectors/snapshot.js';
import type { BatchConsumer } from '../consumer.js';
import type { JudgedBatch } from '../batch.js';
import type { HashedRequest, PromptBlocksStage, PromptReader } from '../prompt/blocks.js';
import { PREFIX_METRICS } from './defs.js';
import { spreadOf, UNBOUNDED_CAP } from './model.js';
import { sizedCache, unboundedCache, type BlockRef, type RequestSpan, type ReuseModel } from './reuse.js';
import { prefixVerdict } from './verdict.js';
import type { PrefixReading } from '../bottleneck/signals.js';
import { bucketAt, combine, sumSince, type Bucket, type PrefixCacheRow, type PrefixCacheStatus } from './window.js';

export type { PrefixCacheRow, PrefixCacheStatus } from './window.js';
export { combine } from './window.js';

/** The flags this consumer reads (SideOptions extends it; config/flags.ts fills it). */
export interface PrefixCacheSettings {
  prefixCache: boolean;
  /** Seconds. */
  prefixCacheWindow: number;
  prefixCacheSample: number;
  prefixCacheBlockSize: number;
  /** The engine's KV cache in tokens where it does not report it; 0: read it from the engine. */
  prefixCacheTokens: number;
}

/** Requests end out of order: each waits this long so that those that started before it are modelled first. */
export const LAG_MS = 3000;
/** Requests waiting to be modelled, at most: past it the oldest are modelled at once. */
export const MAX_PENDING = 65_536;
/** How often the gauges and verdicts are brought up to date. */
const PUBLISH_MS = 1000;
/**
 * Milliseconds of modelling per tick (of PUBLISH_MS) on the metrics thread, at most: past it,
 * requests are counted `busy` and left out until the next tick (shed, never delayed).
 */
export const MODEL_BUDGET_MS = 150;

export interface PrefixCacheOptions {
  registry: Registry;
  machine: MachineReader;
  settings: PrefixCacheSettings;
  upstreams: readonly UpstreamSpec[];
  stage: PromptBlocksStage;
  log: Logger;
  now?: () => number;
}

/** One model on one upstream. */
interface Cell {
  label: string;
  upstream: string;
  unbounded: ReuseModel<number>;
  buckets: Bucket[];
  lastSeen: number;
}

/** One upstream's engine: its cache model and its counters over the window. */
interface Engine {
  spec: UpstreamSpec;
  blockSize: number;
  cacheTokens: number | null;
  sized: (ReuseModel<number> & { readonly cache: { overflows: number } }) | null;
  clockMs: number;
  /** (at, hits, queries) of its prefix-cache counters, oldest first. */
  counters: { at: number; hits: number; queries: number }[];
  prefixCaching: boolean | null;
  from: string;
}

/**
 * A model that several upstreams serve: caches of the same sizes, fed the same requests as if
 * each prefix (its first block) always went to one of them: what prefix-affine routing would reuse.
 */
interface Affine {
  key: string;
  members: string[];
  caches: ReuseModel<number>[];
  clockMs: number;
  buckets: Bucket[];
}

interface Pending {
  req: HashedRequest;
  atMs: number;
  endMs: number | null;
}

export class PrefixCacheMonitor implements BatchConsumer, PromptReader {
  readonly name = 'prefix-cache';
  readonly sample: number;
  private readonly engines = new Map<string, Engine>();
  private readonly cells = new Map<string, Cell>();
  private pending: Pending[] = [];
  private readonly ratio: Gauge;
  private readonly requests: Counter;
  private readonly seen = { all: 0, kept: 0 };
  private timer: NodeJS.Timeout | null = null;
  private readonly now: () => number;
  private readonly windowMs: number;
  private published = new Map<string, PrefixCacheStatus>();
  private readonly affine = new Map<string, Affine>();
  /** Each model's upstreams with a modelled cache, sorted: set at each tick. */
  private replicas = new Map<string, string[]>();
  /** Modelling time since the last tick, ms; and since start (for the bench and the status). */
  private spentMs = 0;
  readonly spent = { ms: 0, requests: 0 };

  constructor(private readonly opts: PrefixCacheOptions) {
    this.now = opts.now ?? Date.now;
    this.sample = opts.settings.prefixCacheSample;
    this.windowMs = opts.settings.prefixCacheWindow * 1000;
    const [ratio, requests] = PREFIX_METRICS;
    this.ratio = gauge(opts.registry, ratio);
    this.requests = new Counter({ name: requests.name, help: requests.help, labelNames: [...requests.labels], registers: [opts.registry] });
    for (const spec of opts.upstreams) {
      this.engines.set(spec.name, {
        spec, blockSize: opts.settings.prefixCacheBlockSize, cacheTokens: null, sized: null, clockMs: 0, counters: [], prefixCaching: null, from: 'setting',
      });
    }
    this.learn();
    opts.stage.subscribe(this);
  }

  /** The block size the chain is cut at: every upstream's (the stage cuts at their common divisor). */
  get blockTokens(): number {
    return this.engines.size === 0 ? this.opts.settings.prefixCacheBlockSize : commonUnit([...this.engines.values()].map((e) => e.blockSize));
  }

  start(): void {
    this.timer = setInterval(() => this.tick(), PUBLISH_MS);
    this.timer.unref();
  }

  ingest(_batch: JudgedBatch): void {
    // The stage hands over the requests (read); the batch itself carries nothing more for this model.
  }

  read(requests: readonly HashedRequest[]): void {
    for (const h of requests) {
      const r = h.record;
      if (r.upstream < 0 || r.status < 200 || r.status >= 300) continue;
      this.seen.all++;
      const upstream = this.opts.upstreams[r.upstream]?.name;
      if (upstream === undefined) continue;
      const cell = this.cell(h.label, upstream);
      const b = bucketAt(this.windowMs, this.now(), cell, r.startedAt);
      if (r.cachedInputTokens >= 0 && r.inputTokensKnown && r.inputTokens > 0) {
        b.usagePrompt += r.inputTokens;
        b.usageCached += Math.min(r.cachedInputTokens, r.inputTokens);
      }
      const result = !h.blocks ? h.skipped! : h.draw >= this.sample ? 'sampled' : this.spentMs >= MODEL_BUDGET_MS ? 'busy' : 'modelled';
      this.requests.inc({ result });
      if (result !== 'modelled') continue;
      this.seen.kept++;
      this.pending.push({ req: h, atMs: r.startedAt, endMs: r.e2e >= 0 ? r.startedAt + r.e2e * 1000 : null });
    }
    if (this.pending.length > MAX_PENDING) this.drain(Infinity);
  }

  /** Models every pending request that started before `through`, in start order. */
  private drain(through: number): void {
    this.pending.sort((a, b) => a.atMs - b.atMs);
    const started = performance.now();
    let n = 0;
    const cut = this.pending.length > MAX_PENDING ? this.pending.length - MAX_PENDING : 0;
    while (n < this.pending.length && (n < cut || this.pending[n]!.atMs <= through)) this.model(this.pending[n++]!);
    if (n > 0) this.pending = this.pending.slice(n);
    const ms = performance.now() - started;
    this.spentMs += ms;
    this.spent.ms += ms;
    this.spent.requests += n;
  }

  private model(p: Pending): void {
    const r = p.req.record;
    const engine = this.engines.get(this.opts.upstreams[r.upstream]!.name)!;
    const blocks = p.req.blocks!;
    const size = engine.blockSize;
    if (size % blocks.unit !== 0) return; // cut before this engine's block size was learned
    const ids = fullBlockIds(blocks, size);
    // vLLM computes the last prompt token always: a whole-prompt hit leaves its last block.
    const limit = Math.min(ids.length, Math.floor(Math.max(0, blocks.tokens - 1) / size));
    const refs: BlockRef<number>[] = ids.slice(0, limit).map((id) => ({ key: id, spread: spreadOf(id), tokens: size }));
    const atMs = Math.max(p.atMs, engine.clockMs);
    engine.clockMs = atMs;
    const span = { atMs, endMs: p.endMs, inputTokens: blocks.tokens, outputTokens: Math.max(0, r.outputTokens), blockSize: size };
    const cell = this.cell(p.req.label, engine.spec.name);
    const b = bucketAt(this.windowMs, this.now(), cell, p.atMs);
    b.requests++;
    b.prompt += blocks.tokens;
    b.unbounded += cell.unbounded.admit(refs, span);
    if (engine.sized) {
      b.sizedPrompt += blocks.tokens;
      b.sized += engine.sized.admit(refs, span);
      this.modelAffine(p.req.label, refs, span, p.atMs);
    }
  }

  private modelAffine(label: string, refs: readonly BlockRef<number>[], span: RequestSpan, startedAt: number): void {
    const members = this.replicas.get(label);
    if (!members || members.length < 2) return;
    const key = members.join('\0');
    let a = this.affine.get(label);
    if (!a || a.key !== key) {
      const engines = members.map((m) => this.engines.get(m)!);
      if (engines.some((e) => e.blockSize !== engines[0]!.blockSize)) return;
      a = {
        key, members, clockMs: 0, buckets: [],
        caches: engines.map((e) => sizedCache<number>(Math.floor(e.cacheTokens! / e.blockSize), `${e.spec.name}'s size, prefix-affine`)),
      };
      this.affine.set(label, a);
    }
    // Each prefix to one replica, by its first block (a prompt with no full block can hit nothing anywhere).
    const pick = refs.length > 0 ? Math.min(members.length - 1, Math.floor(spreadOf(refs[0]!.key, 1) * members.length)) : 0;
    a.clockMs = Math.max(a.clockMs, span.atMs);
    const b = bucketAt(this.windowMs, this.now(), a, startedAt);
    b.sizedPrompt += span.inputTokens;
    b.sized += a.caches[pick]!.admit(refs, { ...span, atMs: a.clockMs });
  }

  private cell(label: string, upstream: string): Cell {
    const key = `${label}\0${upstream}`;
    let c = this.cells.get(key);
    if (!c) {
      c = { label, upstream, unbounded: unboundedCache<number>({ cap: UNBOUNDED_CAP, windowMs: this.windowMs }), buckets: [], lastSeen: 0 };
      this.cells.set(key, c);
    }
    c.lastSeen = this.now();
    return c;
  }

  /** Each upstream's block size and cache size, from its engine's reading (or the settings). */
  private learn(): void {
    const readings = new Map<string, EngineReading>(this.opts.machine.read().engines.map((e) => [e.upstream, e]));
    const s = this.opts.settings;
    for (const e of this.engines.values()) {
      const reading = readings.get(e.spec.name);
      const cfg = reading?.cacheConfig ?? null;
      // An engine block that is not a whole number of 16-token units (SGLang's page of 1) is modelled at the setting's.
      const reported = cfg?.blockSize ?? null;
      const blockSize = reported !== null && reported >= 16 && reported % 16 === 0 ? reported : s.prefixCacheBlockSize;
      const tokens = s.prefixCacheTokens > 0 ? s.prefixCacheTokens : cfg?.tokens ?? null;
      e.prefixCaching = cfg?.prefixCaching ?? null;
      e.from = s.prefixCacheTokens > 0 ? '--prefix-cache-tokens' : cfg?.from ?? 'none';
      if (blockSize !== e.blockSize || tokens !== e.cacheTokens) {
        e.blockSize = blockSize;
        e.cacheTokens = tokens;
        const blocks = tokens === null ? 0 : Math.floor(tokens / blockSize);
        e.sized = blocks >= 1 ? sizedCache<number>(blocks, `${blocks} blocks of ${blockSize} tokens`) : null;
        if (blocks < 1 && tokens !== null) this.opts.log.warn({ upstream: e.spec.name, tokens, blockSize }, 'prefix-cache model: the engine\'s KV cache holds less than one block; no engine-size figure');
      }
      if (reading && reading.prefixCacheHitsTotal !== null && reading.prefixCacheQueriesTotal !== null) {
        const last = e.counters[e.counters.length - 1];
        if (!last || reading.at > last.at) {
          // A counter that went down is an engine restart: what came before is another engine's.
          if (last && (reading.prefixCacheQueriesTotal < last.queries || reading.prefixCacheHitsTotal < last.hits)) e.counters = [];
          e.counters.push({ at: reading.at, hits: reading.prefixCacheHitsTotal, queries: reading.prefixCacheQueriesTotal });
        }
        const oldest = this.now() - this.windowMs;
        while (e.counters.length > 2 && e.counters[1]!.at <= oldest) e.counters.shift();
      } else if (!reading) e.counters = [];
    }
  }

  /** The engine's counters over the window: hits / queries; null without two readings a query apart. */
  private engineRatio(e: Engine): number | null {
    const first = e.counters[0];
    const last = e.counters[e.counters.length - 1];
    if (!first || !last || last.queries - first.queries <= 0) return null;
    return (last.hits - first.hits) / (last.queries - first.queries);
  }

  tick(): void {
    this.learn();
    this.spentMs = 0;
    const replicas = new Map<string, string[]>();
    for (const c of this.cells.values()) if (this.engines.get(c.upstream)?.sized) replicas.set(c.label, [...(replicas.get(c.label) ?? []), c.upstream].sort());
    this.replicas = replicas;
    this.drain(this.now() - LAG_MS);
    const status = new Map<string, PrefixCacheStatus>();
    const since = this.now() - this.windowMs;
    const keptShare = this.seen.all === 0 ? 1 : this.seen.kept / this.seen.all;
    for (const [key, c] of this.cells) {
      if (c.lastSeen < since - 3600_000) {
        this.cells.delete(key);
        continue;
      }
      const sum = sumSince(this.windowMs, c.buckets, since);
      const engine = this.engines.get(c.upstream)!;
      const counters = this.engineRatio(engine);
      const row: PrefixCacheRow = {
        upstream: c.upstream, requests: sum.requests, promptTokens: sum.prompt,
        unbounded: sum.prompt > 0 ? sum.unbounded / sum.prompt : null,
        engineSize: sum.sizedPrompt > 0 ? sum.sized / sum.sizedPrompt : null,
        engine: sum.usagePrompt > 0 ? sum.usageCached / sum.usagePrompt : counters,
        engineFrom: sum.usagePrompt > 0 ? 'usage' : counters !== null ? 'engine_counters' : null,
        blockSize: engine.blockSize, cacheTokens: engine.sized ? engine.cacheTokens : null, prefixCaching: engine.prefixCaching,
      };
      const labels = { gen_ai_request_model: c.label, upstream: c.upstream };
      for (const [cache, v] of [['unbounded', row.unbounded], ['engine_size', row.engineSize], ['engine', row.engine]] as const) {
        if (v === null) this.ratio.remove({ ...labels, cache });
        else this.ratio.set({ ...labels, cache }, v);
      }
      let st = status.get(c.label);
      if (!st) status.set(c.label, (st = { windowSeconds: this.windowMs / 1000, replicas: 0, affine: null, keptShare, upstreams: [], verdict: null }));
      st.upstreams.push(row);
    }
    for (const [label, st] of status) {
      st.replicas = this.replicas.get(label)?.length ?? 0;
      const a = this.affine.get(label);
      if (a && st.replicas >= 2 && a.key === this.replicas.get(label)!.join('\0')) {
        const sum = sumSince(this.windowMs, a.buckets, since);
        st.affine = sum.sizedPrompt > 0 ? sum.sized / sum.sizedPrompt : null;
      }
      st.verdict = prefixVerdict({ ...combine(st.upstreams), affine: st.affine }, this.engineOf(st.upstreams));
    }
    this.published = status;
  }

  private engineOf(rows: readonly PrefixCacheRow[]): string {
    return this.engines.get(rows[0]?.upstream ?? '')?.spec.engine ?? 'vllm';
  }

  /** Each model's figures as of the last tick. */
  status(): ReadonlyMap<string, PrefixCacheStatus> {
    return this.published;
  }

  /** One model's figures as the bottleneck verdict reads them (its prefix* signals); null: none yet. */
  reading(label: string): PrefixReading | null {
    const st = this.published.get(label);
    if (!st) return null;
    const r = combine(st.upstreams);
    const from = new Set(st.upstreams.filter((u) => u.engine !== null).map((u) => u.engineFrom));
    return {
      windowSeconds: st.windowSeconds, traffic: r.unbounded, engineSize: r.engineSize, delivered: r.engine,
      deliveredFrom: from.size === 0 ? null : [...from].map((f) => (f === 'usage' ? 'usage cached_tokens' : 'the engine\'s prefix-cache counters')).join(' and '),
      keptShare: st.keptShare,
      verdict: st.verdict && { kind: st.verdict.kind, summary: st.verdict.summary, advice: Object.fromEntries(st.verdict.advice.map((a) => [a.engine, a.text])) },
    };
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
