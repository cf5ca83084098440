/**
 * The simulated engine: one scheduler loop of timed steps, as in vLLM V1's continuous
 * batching. Each step decodes one chunk for every running sequence, spends what is left of
 * the token budget on prefill (chunked), admits waiting requests while there is room
 * (--max-num-seqs, KV blocks) and, when a growing sequence needs a block and none is free,
 * preempts the newest running one (recompute: it goes back to the front of the queue).
 * A step lasts base + per_seq × batch + prefill_tokens / prefill_tps; its outputs are
 * delivered when it ends.
 */
import { performance } from 'node:perf_hooks';
import { BlockPool } from '../lib/block-pool.js';
import type { SimOptions } from './options.js';
import type { PerRequestTiming } from './chunks.js';

export type FinishReason = 'stop' | 'length' | 'abort';

/** Where a sequence's output goes (the HTTP response). */
export interface SeqSink {
  /** `count` tokens were generated in one step; `last` when the sequence is complete. */
  tokens(count: number, last: boolean): void;
}

/** Histogram observations, made as things happen (counters are read from EngineState). */
export interface EngineEvents {
  queued(seconds: number): void;
  /** First scheduled → first token (vLLM's request_prefill_time_seconds). */
  prefill(seconds: number): void;
  /** First token → last token (vLLM's request_decode_time_seconds). */
  decode(seconds: number): void;
  firstToken(seconds: number): void;
  interToken(seconds: number): void;
  finished(reason: FinishReason, e2eSeconds: number): void;
}

export interface SeqSpec {
  /** The request's model (per-model busy time: EngineState.byModel). */
  model: string;
  promptTokens: number;
  /** Chained hashes of the prompt's full blocks. */
  hashes: readonly number[];
  outputTokens: number;
  finishReason: 'stop' | 'length';
  sink: SeqSink;
}

const WAITING = 0;
const RUNNING = 1;
const DONE = 2;

export class Sequence {
  state = WAITING;
  generated = 0;
  prefillLeft = 0;
  ownBlocks = 0;
  shared: number[] = [];
  scheduled = false;
  scheduledAt = 0;
  firstTokenAt = -1;
  lastTokenAt = 0;
  /** Prompt tokens served from the prefix cache at admission (usage.prompt_tokens_details.cached_tokens). */
  cachedTokens = 0;
  constructor(readonly spec: SeqSpec, readonly arrival: number) {}

  /**
   * vLLM's per-request timing (--enable-per-request-metrics) as of now, from the engine's own
   * clock: the queue to scheduling, the first token and the last from scheduling, the mean gap
   * between tokens (two or more), the tokens per second of its running time.
   */
  timing(): PerRequestTiming {
    const scheduled = this.scheduled;
    const first = this.firstTokenAt >= 0;
    const running = this.lastTokenAt - this.scheduledAt;
    return {
      queue_time_ms: scheduled ? this.scheduledAt - this.arrival : null,
      time_to_first_token_ms: scheduled && first ? this.firstTokenAt - this.scheduledAt : null,
      generation_time_ms: scheduled && first ? running : null,
      mean_itl_ms: first && this.generated > 1 ? (this.lastTokenAt - this.firstTokenAt) / (this.generated - 1) : null,
      tokens_per_second: scheduled && first && running > 0 ? this.generated / (running / 1000) : null,
    };
  }
}

/**
 * The engine's own account of one model's work, the ground truth energy attribution is
 * checked against (docs/energy.md): each step's time split between the sequences it ran,
 * equally for the step's fixed part and its per-sequence part, and by prompt tokens for the
 * prefill it did; the tokens the model's sequences were given.
 */
export interface ModelWork {
  busySeconds: number;
  promptTokens: number;
  generationTokens: number;
}

export interface EngineState {
  running: number;
  waiting: number;
  kvBlocksUsed: number;
  kvBlocksTotal: number;
  kvCacheUsage: number;
  prefixQueriedTokens: number;
  prefixHitTokens: number;
  preemptions: number;
  promptTokens: number;
  generationTokens: number;
  /** Of generationTokens, those of requests aborted before their end (the client left), and their prompts. */
  abortedGenerationTokens: number;
  abortedPromptTokens: number;
  finished: Record<FinishReason, number>;
  steps: number;
  byModel: Record<string, ModelWork>;
}

export class Engine {
  private waiting: Sequence[] = [];
  private running: Sequence[] = [];
  private readonly pool: BlockPool;
  private readonly msPerSeq: number;
  private readonly msBase: number;
  private readonly msPerPrefillToken: number;
  private timer: NodeJS.Timeout | NodeJS.Immediate | null = null;
  private stepBusy = false;
  private lastEnd = 0;
  private closed = false;
  private readonly counts = { prefixQueriedTokens: 0, prefixHitTokens: 0, preemptions: 0, promptTokens: 0, generationTokens: 0, abortedGenerationTokens: 0, abortedPromptTokens: 0, steps: 0 };
  private readonly finishedBy: Record<FinishReason, number> = { stop: 0, length: 0, abort: 0 };
  private readonly byModel = new Map<string, ModelWork>();

  constructor(private readonly opts: SimOptions, private readonly events: EngineEvents) {
    const scale = Number.isFinite(opts.speed) ? 1 / opts.speed : 0;
    this.msBase = opts.decodeStepMs * scale;
    this.msPerSeq = opts.stepPerSeqMs * scale;
    this.msPerPrefillToken = opts.prefillTps > 0 ? (1000 / opts.prefillTps) * scale : 0;
    this.pool = new BlockPool(Math.floor(opts.kvCacheTokens / opts.blockSize), opts.prefixCaching);
  }

  add(spec: SeqSpec): Sequence {
    const seq = new Sequence(spec, performance.now());
    this.waiting.push(seq);
    this.kick();
    return seq;
  }

  /** The client left (or the stream was cut): free everything at once, as vLLM does. */
  abort(seq: Sequence): void {
    if (seq.state === DONE) return;
    if (seq.state === WAITING) this.waiting.splice(this.waiting.indexOf(seq), 1);
    else this.running.splice(this.running.indexOf(seq), 1);
    this.counts.abortedGenerationTokens += seq.generated;
    this.counts.abortedPromptTokens += seq.spec.promptTokens;
    this.finish(seq, 'abort', performance.now());
  }

  state(): EngineState {
    return {
      running: this.running.length,
      waiting: this.waiting.length,
      kvBlocksUsed: this.pool.usedBlocks,
      kvBlocksTotal: this.pool.total,
      kvCacheUsage: this.pool.usedBlocks / this.pool.total,
      ...this.counts,
      finished: { ...this.finishedBy },
      byModel: Object.fromEntries([...this.byModel].map(([m, w]) => [m, { ...w }])),
    };
  }

  close(): void {
    this.closed = true;
    if (this.timer) {
      clearTimeout(this.timer as NodeJS.Timeout);
      clearImmediate(this.timer as NodeJS.Immediate);
    }
    this.timer = null;
  }

  /** Arrivals in the same turn of the event loop join the same step. */
  private kick(): void {
    if (this.stepBusy || this.closed) return;
    this.stepBusy = true;
    this.timer = setImmediate(() => this.startStep(false));
  }

  private startStep(continuing: boolean): void {
    const plan = this.schedule();
    const batch = plan.decode.length + plan.prefill.length;
    if (batch === 0 || this.closed) {
      this.stepBusy = false;
      this.timer = null;
      return;
    }
    this.counts.steps++;
    const ms = this.msBase + this.msPerSeq * batch + this.msPerPrefillToken * plan.prefillTokens;
    this.account(plan, batch);
    const now = performance.now();
    // Back-to-back steps keep a virtual clock, so timer lateness does not add up over a stream.
    const start = continuing && now - this.lastEnd < 20 ? this.lastEnd : now;
    const end = start + ms;
    this.lastEnd = end;
    const run = () => this.endStep(plan);
    const delay = end - now;
    this.timer = delay >= 1 ? setTimeout(run, delay) : setImmediate(run);
  }

  /** Splits the step's time between its sequences' models (ModelWork). */
  private account(plan: Plan, batch: number): void {
    const each = (this.msBase + this.msPerSeq * batch) / batch / 1000;
    for (const seq of plan.decode) this.work(seq.spec.model).busySeconds += each;
    plan.prefill.forEach((seq, i) => {
      this.work(seq.spec.model).busySeconds += each + (this.msPerPrefillToken * plan.prefillCounts[i]!) / 1000;
    });
  }

  private work(model: string): ModelWork {
    let w = this.byModel.get(model);
    if (!w) this.byModel.set(model, (w = { busySeconds: 0, promptTokens: 0, generationTokens: 0 }));
    return w;
  }

  private schedule(): Plan {
    const plan: Plan = { decode: [], prefill: [], prefillCounts: [], prefillTokens: 0 };
    let budget = this.opts.maxNumBatchedTokens;
    let preempted = false;
    const running = this.running;
    for (let i = 0; i < running.length && budget > 0; i++) {
      const seq = running[i]!;
      if (seq.prefillLeft > 0) {
        const n = Math.min(seq.prefillLeft, budget);
        addPrefill(plan, seq, n);
        budget -= n;
        continue;
      }
      const k = Math.min(this.opts.tokensPerChunk, seq.spec.outputTokens - seq.generated);
      const need = this.blocksFor(seq.spec.promptTokens + seq.generated + k) - seq.ownBlocks - seq.shared.length;
      if (need > 0) {
        while (!this.pool.allocate(need)) {
          const victim = running[running.length - 1]!;
          this.preempt(victim);
          preempted = true;
          if (victim === seq) break;
        }
        if (seq.state !== RUNNING) break;
        seq.ownBlocks += need;
      }
      plan.decode.push(seq);
      budget -= k;
    }
    // vLLM V1 admits nothing new in a step that had to preempt.
    while (!preempted && budget > 0 && this.waiting.length > 0 && running.length < this.opts.maxNumSeqs) {
      const seq = this.waiting[0]!;
      if (!this.admit(seq)) break;
      this.waiting.shift();
      running.push(seq);
      const n = Math.min(seq.prefillLeft, budget);
      addPrefill(plan, seq, n);
      budget -= n;
    }
    return plan;
  }

  /** Takes cached prefix blocks and fresh blocks for the whole context, or nothing. */
  private admit(seq: Sequence): boolean {
    const bs = this.opts.blockSize;
    const context = seq.spec.promptTokens + seq.generated;
    // The last prompt token is always computed, so a full hit still leaves one block to prefill.
    const hit = this.pool.match(seq.spec.hashes, Math.floor((seq.spec.promptTokens - 1) / bs));
    this.pool.acquire(seq.spec.hashes, hit);
    const fresh = this.blocksFor(context) - hit;
    if (!this.pool.allocate(fresh)) {
      this.pool.release(0, seq.spec.hashes.slice(0, hit));
      return false;
    }
    seq.shared = seq.spec.hashes.slice(0, hit);
    seq.ownBlocks = fresh;
    seq.prefillLeft = context - hit * bs;
    seq.cachedTokens = hit * bs;
    seq.state = RUNNING;
    this.counts.prefixQueriedTokens += context;
    this.counts.prefixHitTokens += hit * bs;
    if (!seq.scheduled) {
      seq.scheduled = true;
      seq.scheduledAt = performance.now();
      this.events.queued((seq.scheduledAt - seq.arrival) / 1000);
    }
    return true;
  }

  private preempt(seq: Sequence): void {
    this.running.pop();
    this.pool.release(seq.ownBlocks, seq.shared);
    seq.ownBlocks = 0;
    seq.shared = [];
    seq.prefillLeft = 0;
    seq.state = WAITING;
    this.waiting.unshift(seq);
    this.counts.preemptions++;
  }

  private endStep(plan: Plan): void {
    if (this.closed) return;
    const now = performance.now();
    let finished = false;
    for (let i = 0; i < plan.prefill.length; i++) {
      const seq = plan.prefill[i]!;
      if (seq.state !== RUNNING) continue;
      seq.prefillLeft -= plan.prefillCounts[i]!;
      if (seq.prefillLeft > 0) continue;
      this.cachePrompt(seq);
      finished = this.emit(seq, 1, now) || finished;
    }
    for (const seq of plan.decode) {
      if (seq.state !== RUNNING) continue;
      const k = Math.min(this.opts.tokensPerChunk, seq.spec.outputTokens - seq.generated);
      finished = this.emit(seq, k, now) || finished;
    }
    if (finished) this.running = this.running.filter((s) => s.state === RUNNING);
    this.startStep(true);
  }

  /** Returns whether the sequence finished (it stays in `running` until the step's sweep). */
  private emit(seq: Sequence, count: number, now: number): boolean {
    const first = seq.generated === 0;
    seq.generated += count;
    this.counts.generationTokens += count;
    const work = this.work(seq.spec.model);
    work.generationTokens += count;
    if (first) {
      this.counts.promptTokens += seq.spec.promptTokens;
      work.promptTokens += seq.spec.promptTokens;
      this.events.firstToken((now - seq.arrival) / 1000);
      // Preempted and rescheduled: vLLM keeps the first scheduling time, so prefill includes the redo.
      this.events.prefill((now - seq.scheduledAt) / 1000);
      seq.firstTokenAt = now;
    } else this.events.interToken((now - seq.lastTokenAt) / 1000);
    seq.lastTokenAt = now;
    const last = seq.generated >= seq.spec.outputTokens;
    if (last) this.finish(seq, seq.spec.finishReason, now);
    seq.spec.sink.tokens(count, last);
    return last;
  }

  private finish(seq: Sequence, reason: FinishReason, now: number): void {
    if (seq.state === RUNNING) this.pool.release(seq.ownBlocks, seq.shared);
    seq.ownBlocks = 0;
    seq.shared = [];
    seq.state = DONE;
    this.finishedBy[reason]++;
    if (seq.firstTokenAt >= 0) this.events.decode((now - seq.firstTokenAt) / 1000);
    this.events.finished(reason, (now - seq.arrival) / 1000);
  }

  /** The prompt's full blocks, now computed, become reusable by later requests. */
  private cachePrompt(seq: Sequence): void {
    const hashes = seq.spec.hashes;
    for (let i = seq.shared.length; i < hashes.length; i++) {
      if (!this.pool.register(hashes[i]!)) continue;
      seq.ownBlocks--;
      seq.shared.push(hashes[i]!);
    }
  }

  private blocksFor(tokens: number): number {
    return Math.ceil(tokens / this.opts.blockSize);
  }
}

interface Plan {
  decode: Sequence[];
  prefill: Sequence[];
  prefillCounts: number[];
  prefillTokens: number;
}

function addPrefill(plan: Plan, seq: Sequence, n: number): void {
  plan.prefill.push(seq);
  plan.prefillCounts.push(n);
  plan.prefillTokens += n;
}
