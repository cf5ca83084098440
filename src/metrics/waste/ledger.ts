/**
 * The waste ledger (docs/waste.md): tokens spent on nothing, by cause, per model and upstream;
 * the effective goodput; and the proof that an abort reached the engine. A reader of judged
 * batches (metrics/consumer.ts) and of the machine snapshot (the engines' running and waiting
 * gauges). Everything per request is already in its record: the outcome, the tokens seen, the
 * body's size, the abort's propagation. The GPU-seconds of waste are the energy meter's
 * (energy/meter.ts), which splits GPU time with the same causes (wasteCauseOf below).
 */
import { Counter, Histogram, type Gauge, type Registry } from 'prom-client';
import type { Logger } from 'pino';
import { gauge, type BucketSet } from '../../lib/metric-def.js';
import type { MachineReader, MachineState } from '../../collectors/snapshot.js';
import type { UpstreamSpec } from '../../lib/upstream-spec.js';
import type { RequestRecord } from '../../record/record.js';
import { routeByLabel } from '../../record/routes.js';
import type { JudgedBatch } from '../batch.js';
import type { BatchConsumer } from '../consumer.js';
import { WASTE_METRICS, type RequestWasteCause, type WasteCause } from './defs.js';
import { quantileOf } from '../headroom/observe.js';

/** The effective goodput's window, in one-second buckets. */
export const GOODPUT_WINDOW_S = 60;
/** An abort the engine has not released after this long is given up on (another client holds it, or its collector is off). */
export const RELEASE_GIVE_UP_MS = 60_000;
/** How long the in-flight counts are kept, and how near a scrape a count must be to be compared with it. */
const HISTORY_MS = 5000;
const SCRAPE_SLACK_MS = 100;
/** The most tokens one abort's unseen tail may add: an engine notices a closed connection within a few steps; more is someone else's traffic. */
export const TAIL_CAP_TOKENS = 64;

/**
 * Why a generation request's work went to nobody; null when it did not (or it never reached an
 * engine). A stream whose client left before its first token timed out in the queue; one that
 * left after it (or a plain request whose client left) aborted; a 429 or 503 after the body was
 * sent is the engine's refusal.
 */
export function wasteCauseOf(r: Pick<RequestRecord, 'route' | 'outcome' | 'status' | 'streamed' | 'outputTokens' | 'upstream' | 'abortPropagation'>): RequestWasteCause | null {
  if (r.upstream < 0 || !routeByLabel(r.route).metered) return null;
  if (r.outcome === 'client_abort') {
    if (r.abortPropagation < 0) return null; // never written upstream: the engine got nothing
    return r.streamed && r.outputTokens === 0 ? 'queue_timeout' : 'client_abort';
  }
  if (r.outcome === 'upstream_error' && (r.status === 429 || r.status === 503)) return 'rejected';
  return null;
}

/** A record's prompt tokens: the usage's where the engine reported them, else its body's bytes at `charsPerToken`. */
export function promptTokensOf(r: Pick<RequestRecord, 'inputTokensKnown' | 'inputTokens' | 'requestBytes'>, charsPerToken: number): number {
  if (r.inputTokensKnown) return r.inputTokens;
  return r.requestBytes > 0 ? Math.ceil(r.requestBytes / charsPerToken) : 0;
}

export interface WasteOptions {
  registry: Registry;
  machine: MachineReader;
  upstreams: readonly UpstreamSpec[];
  buckets: Record<BucketSet, number[]>;
  charsPerToken: number;
  log: Logger;
  /** Unix ms (tests drive a clock of their own). */
  now?: () => number;
}

/** Per model: what the page shows. */
export interface ModelWaste {
  /** Tokens since start by cause and token type. */
  tokens: Record<WasteCause, { input: number; output: number }>;
  /** Over GOODPUT_WINDOW_S: good output tokens and all output tokens per second, and their ratio (null: no output). */
  goodTokensPerSecond: number;
  outputTokensPerSecond: number;
  effectiveGoodput: number | null;
}

export interface WasteStatus {
  models: Map<string, ModelWaste>;
  upstreams: { upstream: string; aborts: number; propagationP99Seconds: number | null; lastReleaseSeconds: number | null; releasePending: boolean }[];
}

interface Second { at: number; good: number; all: number }

export class WasteLedger implements BatchConsumer {
  readonly name = 'waste';
  private readonly tokens: Counter;
  private readonly goodput: Gauge;
  private readonly propagation: Histogram;
  private readonly release: Histogram;
  private readonly names: readonly string[];
  private readonly now: () => number;
  private readonly models = new Map<string, { tokens: ModelWaste['tokens']; seconds: Second[] }>();
  /** Per upstream index: the propagation figures kept for the page's P99 (the last 1,000), the abort waiting for the engine's release, the last release. */
  private readonly perUpstream: { propagations: number[]; aborts: number; pendingSince: number | null; lastRelease: number | null }[];
  /** Requests in flight per upstream as each batch said, and when (the last HISTORY_MS): what a scrape is compared with. */
  private readonly inFlight: { at: number; counts: readonly number[] }[] = [];
  /** Per upstream index: the engine's recomputed-token counters at its last reading, and the output tokens per model label since. */
  private readonly recomputed: ({ prompt: number; output: number; at: number } | null)[];
  private readonly servedSince: Map<string, number>[];
  private readonly lastModel: (string | null)[];
  /**
   * Per upstream index: the unseen tail's account (countTail). The engine's generation counter and
   * the output tokens infermeter read from it (every request), at the last idle scrape, and the
   * aborts since, by model and cause.
   */
  private readonly tail: { engine: number | null; at: number; seen: number; seenThen: number; aborts: Map<string, { model: string; cause: RequestWasteCause; n: number }> }[];
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly opts: WasteOptions) {
    this.now = opts.now ?? Date.now;
    this.names = opts.upstreams.map((u) => u.name);
    this.perUpstream = this.names.map(() => ({ propagations: [], aborts: 0, pendingSince: null, lastRelease: null }));
    this.recomputed = this.names.map(() => null);
    this.servedSince = this.names.map(() => new Map());
    this.lastModel = this.names.map(() => null);
    this.tail = this.names.map(() => ({ engine: null, at: 0, seen: 0, seenThen: 0, aborts: new Map() }));
    const [tokens, , goodput, propagation, release] = WASTE_METRICS;
    this.tokens = new Counter({ name: tokens.name, help: tokens.help, labelNames: [...tokens.labels], registers: [opts.registry] });
    this.goodput = gauge(opts.registry, goodput);
    this.propagation = new Histogram({ name: propagation.name, help: propagation.help, labelNames: [...propagation.labels], buckets: opts.buckets[propagation.buckets], registers: [opts.registry] });
    this.release = new Histogram({ name: release.name, help: release.help, labelNames: [...release.labels], buckets: opts.buckets[release.buckets], registers: [opts.registry] });
  }

  ingest(batch: JudgedBatch): void {
    const now = this.now();
    if (batch.inFlightByUpstream) {
      this.inFlight.push({ at: now, counts: batch.inFlightByUpstream });
      while (this.inFlight.length > 1 && this.inFlight[0]!.at < now - HISTORY_MS) this.inFlight.shift();
    }
    const { records, labels, verdicts } = batch;
    for (let i = 0; i < records.length; i++) {
      const r = records[i]!;
      if (r.upstream < 0 || !routeByLabel(r.route).metered) continue;
      const model = labels[i]!;
      const m = this.model(model);
      const v = verdicts[i];
      // Good: it completed and met every SLO that judges it (none judging it: completing is enough).
      const good = r.outcome === 'ok' && (v === null || v === undefined || v.every((x) => x.good));
      this.second(m.seconds, now, good ? r.outputTokens : 0, r.outputTokens);
      const tail = this.tail[r.upstream];
      if (tail) tail.seen += r.outputTokens;
      const served = this.servedSince[r.upstream];
      if (served) {
        served.set(model, (served.get(model) ?? 0) + r.outputTokens + 1);
        this.lastModel[r.upstream] = model;
      }
      const cause = wasteCauseOf(r);
      if (cause === null) continue;
      const upstream = this.names[r.upstream] ?? '';
      const input = promptTokensOf(r, this.opts.charsPerToken);
      const output = cause === 'client_abort' ? r.outputTokens : 0;
      this.tokens.inc({ gen_ai_request_model: model, upstream, cause, gen_ai_token_type: 'input' }, input);
      this.tokens.inc({ gen_ai_request_model: model, upstream, cause, gen_ai_token_type: 'output' }, output);
      m.tokens[cause].input += input;
      m.tokens[cause].output += output;
      if (cause === 'rejected') continue;
      if (tail) {
        const key = `${model}\0${cause}`;
        const a = tail.aborts.get(key);
        if (a) a.n++;
        else tail.aborts.set(key, { model, cause, n: 1 });
      }
      const u = this.perUpstream[r.upstream];
      if (!u) continue;
      this.propagation.observe({ upstream }, r.abortPropagation);
      u.aborts++;
      u.propagations.push(r.abortPropagation);
      if (u.propagations.length > 1000) u.propagations.splice(0, u.propagations.length - 1000);
      // The engine's release is timed from the latest abort of a burst: the scrape must come after it.
      u.pendingSince = now;
    }
  }

  start(): void {
    this.timer = setInterval(() => this.tick(), 1000);
    this.timer.unref();
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Once a second: the engines' release of aborted requests, and the effective goodput gauge. */
  tick(): void {
    const now = this.now();
    try {
      const engines = this.opts.machine.read().engines;
      this.checkRelease(now, engines);
      this.countRecomputed(engines);
      this.countTail(engines);
    } catch (err) {
      this.opts.log.warn({ err: (err as Error).message }, 'waste: reading the machine snapshot failed');
    }
    for (const [model, m] of this.models) {
      const { good, all } = this.sums(m.seconds, now);
      if (all > 0) this.goodput.set({ gen_ai_request_model: model }, good / all);
    }
  }

  status(): WasteStatus {
    const now = this.now();
    const models = new Map<string, ModelWaste>();
    for (const [model, m] of this.models) {
      const { good, all } = this.sums(m.seconds, now);
      models.set(model, { tokens: structuredClone(m.tokens), goodTokensPerSecond: good / GOODPUT_WINDOW_S, outputTokensPerSecond: all / GOODPUT_WINDOW_S, effectiveGoodput: all > 0 ? good / all : null });
    }
    return {
      models,
      upstreams: this.perUpstream.map((u, i) => ({
        upstream: this.names[i]!, aborts: u.aborts, propagationP99Seconds: quantileOf(u.propagations, 0.99),
        lastReleaseSeconds: u.lastRelease, releasePending: u.pendingSince !== null,
      })),
    };
  }

  /** An abort is released at the engine's first scrape after it that holds no more than infermeter had in flight to it. */
  private checkRelease(now: number, engines: MachineState['engines']): void {
    this.perUpstream.forEach((u, i) => {
      if (u.pendingSince === null) return;
      if (now - u.pendingSince > RELEASE_GIVE_UP_MS) {
        u.pendingSince = null;
        return;
      }
      const e = engines.find((x) => x.upstream === this.names[i]);
      if (!e || e.at <= u.pendingSince || e.running === null) return;
      if (e.running + (e.waiting ?? 0) > this.inFlightAround(i, e.at)) return;
      const seconds = (e.at - u.pendingSince) / 1000;
      this.release.observe({ upstream: this.names[i]! }, seconds);
      u.lastRelease = seconds;
      u.pendingSince = null;
    });
  }

  /**
   * The most requests infermeter had in flight to upstream `i` within SCRAPE_SLACK_MS of a scrape
   * at `at` (batches are up to 20 ms apart and late by a hop): the engine, which ends a request
   * before infermeter reads its end, should hold no more. The last count when none is that near.
   */
  private inFlightAround(i: number, at: number): number {
    let most = -1;
    for (const b of this.inFlight) if (Math.abs(b.at - at) <= SCRAPE_SLACK_MS) most = Math.max(most, b.counts[i] ?? 0);
    if (most >= 0) return most;
    let last = 0;
    for (const b of this.inFlight) if (b.at <= at) last = b.counts[i] ?? 0;
    return last;
  }

  /**
   * The engine's recomputed tokens since its last reading, as `preempted`, split between the
   * models the upstream served since (by output tokens, each request counting one more), else
   * to the last one it served. A first reading or a counter that went back (a restart) is the
   * new baseline.
   */
  private countRecomputed(engines: MachineState['engines']): void {
    this.names.forEach((name, i) => {
      const e = engines.find((x) => x.upstream === name);
      if (!e) return;
      const served = this.servedSince[i]!;
      if (e.recomputedPromptTokensTotal === null || e.recomputedOutputTokensTotal === null) {
        served.clear(); // an engine that does not count them (vLLM): nothing to split
        return;
      }
      const last = this.recomputed[i];
      const now = { prompt: e.recomputedPromptTokensTotal, output: e.recomputedOutputTokensTotal, at: e.at };
      if (last && e.at === last.at) return;
      this.recomputed[i] = now;
      if (!last || now.prompt < last.prompt || now.output < last.output) {
        served.clear(); // a new baseline: what was served before it is not this interval's
        return;
      }
      const prompt = now.prompt - last.prompt;
      const output = now.output - last.output;
      let weights: [string, number][] = [...served];
      served.clear();
      if (weights.length === 0) weights = this.lastModel[i] ? [[this.lastModel[i]!, 1]] : [];
      const total = weights.reduce((a, [, w]) => a + w, 0);
      if (total === 0 || (prompt === 0 && output === 0)) return;
      for (const [model, w] of weights) {
        const f = w / total;
        const m = this.model(model);
        this.tokens.inc({ gen_ai_request_model: model, upstream: name, cause: 'preempted', gen_ai_token_type: 'input' }, prompt * f);
        this.tokens.inc({ gen_ai_request_model: model, upstream: name, cause: 'preempted', gen_ai_token_type: 'output' }, output * f);
        m.tokens.preempted.input += prompt * f;
        m.tokens.preempted.output += output * f;
      }
    });
  }

  /**
   * The unseen tail (docs/waste.md, "Tokens after the close"): what the engine generated for
   * aborted requests after the last token infermeter read. At an idle scrape (the engine holds
   * nothing, and infermeter had nothing in flight to it from its last batch before the scrape on:
   * idleSince) the engine's generation counter has grown since the last idle scrape by
   * exactly what infermeter read from it, plus those tails, plus any traffic that bypassed
   * infermeter. The excess goes to the aborts since, split by count, at most TAIL_CAP_TOKENS
   * each; the rest is taken for bypassing traffic. A first reading or a counter that went back
   * (a restart) is the new baseline.
   */
  private countTail(engines: MachineState['engines']): void {
    this.names.forEach((name, i) => {
      const e = engines.find((x) => x.upstream === name);
      const t = this.tail[i]!;
      if (!e || typeof e.generationTokensTotal !== 'number' || e.at <= t.at || e.running !== 0 || (e.waiting ?? 0) !== 0) return;
      if (!this.idleSince(i, e.at)) return;
      const grew = e.generationTokensTotal - (t.engine ?? e.generationTokensTotal);
      const excess = t.engine === null || grew < 0 ? 0 : grew - (t.seen - t.seenThen);
      const aborts = [...t.aborts.values()];
      t.engine = e.generationTokensTotal;
      t.at = e.at;
      t.seenThen = t.seen;
      t.aborts.clear();
      const n = aborts.reduce((a, x) => a + x.n, 0);
      if (excess <= 0 || n === 0) return;
      const each = Math.min(excess / n, TAIL_CAP_TOKENS);
      for (const a of aborts) {
        this.tokens.inc({ gen_ai_request_model: a.model, upstream: name, cause: a.cause, gen_ai_token_type: 'output' }, each * a.n);
        this.model(a.model).tokens[a.cause].output += each * a.n;
      }
    });
  }

  /**
   * Whether infermeter had nothing in flight to upstream `i` from its last batch at or before `at`
   * through the latest (heartbeats come each second). Records arriving after `at` are then of
   * requests that ended before it (their tokens are in the engine's counter too), or that started
   * and ended between two batches after it (which only makes the excess smaller). No batch at all:
   * nothing was ever in flight.
   */
  private idleSince(i: number, at: number): boolean {
    for (let k = this.inFlight.length - 1; k >= 0; k--) {
      const b = this.inFlight[k]!;
      if ((b.counts[i] ?? 0) !== 0) return false;
      if (b.at <= at) return true;
    }
    return this.inFlight.length === 0;
  }

  private model(label: string): { tokens: ModelWaste['tokens']; seconds: Second[] } {
    let m = this.models.get(label);
    if (!m) {
      const zero = () => ({ input: 0, output: 0 });
      this.models.set(label, (m = { tokens: { client_abort: zero(), queue_timeout: zero(), rejected: zero(), preempted: zero() }, seconds: [] }));
    }
    return m;
  }

  private second(seconds: Second[], now: number, good: number, all: number): void {
    const at = Math.floor(now / 1000);
    const last = seconds.at(-1);
    if (last && last.at === at) {
      last.good += good;
      last.all += all;
    } else seconds.push({ at, good, all });
    while (seconds.length > 0 && seconds[0]!.at <= at - GOODPUT_WINDOW_S) seconds.shift();
  }

  private sums(seconds: Second[], now: number): { good: number; all: number } {
    const from = Math.floor(now / 1000) - GOODPUT_WINDOW_S;
    let good = 0;
    let all = 0;
    for (const s of seconds) {
      if (s.at <= from) continue;
      good += s.good;
      all += s.all;
    }
    return { good, all };
  }
}
