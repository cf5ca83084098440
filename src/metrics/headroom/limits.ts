/**
 * Where the batch stops growing, read from the machine snapshot (collectors/snapshot.ts) at
 * each evaluation: the engines' running and waiting requests and KV usage.
 *
 * - KV: the sequences the cache holds at today's mix are the mean running over the mean KV
 *   usage (each running sequence holds its share of the cache), over the window.
 * - Slots (--max-num-seqs, llama.cpp's --parallel): the running count the batch sits at
 *   while requests wait and the KV cache has room. A request also waits for the step that
 *   admits it, so one sighting is not enough: the largest running count ever read must have
 *   been read with requests waiting in SLOT_SIGHTINGS readings before it is taken for the
 *   limit. And the batch must sit there: of the readings with requests waiting (and KV room)
 *   since start, at least PINNED_SHARE at it. A prefill-bound engine queues at every batch
 *   size (requests wait for the step's token budget, not for a slot), and its largest batch
 *   seen is no limit. Kept since start, like the bottleneck verdict's TPOT floor.
 *
 * A slot limit once read holds until the engine changes: it is seen running more (the batch
 * was not at a limit), or it restarts (its prompt-token counter goes back). Without that, the
 * share of readings pinned at the limit moved with the load from one poll to the next, and the
 * limit came and went (issue 45: `batchLimit 9` from the slots, then 379.6 from the KV cache,
 * on consecutive polls of a steady 3 req/s).
 */
import type { EngineReading, MachineState } from '../../collectors/snapshot.js';

/** Readings at the largest batch with requests waiting before it counts as the slot limit. */
export const SLOT_SIGHTINGS = 3;
/** Share of the readings with requests waiting taken at the largest batch, for that batch to be the slot limit. */
export const PINNED_SHARE = 0.5;
/** KV usage under which a waiting request waits for a slot, not for KV blocks. */
const KV_ROOM = 0.8;
/** KV usage under which the running / usage ratio is too coarse to read. */
const KV_MIN = 0.01;

interface Sample {
  at: number;
  running: number;
  kv: number | null;
}

export interface EngineLimits {
  slots: number | null;
  kvSequences: number | null;
}

/** The engine readings of one model (its upstreams', or every engine's), over the window. */
export class LimitHistory {
  private samples: Sample[] = [];
  private maxRunning = 0;
  private sightings = 0;
  /**
   * Readings with requests waiting (and KV room) since start, at any batch: not reset with a new
   * largest batch, which a prefill-bound engine reaches in a burst, queue and all.
   */
  private queued = 0;
  private lastAt = 0;
  /** The slot limit read, held until the engine changes. */
  private slots: number | null = null;
  /** The engines' prompt-token counters at the last reading, by upstream: one going back is a restart. */
  private promptTotals = new Map<string, number>();

  /** One snapshot; `upstreams` narrows to the engines that serve the model (empty: all). */
  add(m: MachineState, upstreams: readonly string[], from: number): void {
    const engines = m.engines.filter((e) => upstreams.length === 0 || upstreams.includes(e.upstream));
    const fresh = engines.filter((e) => e.at > this.lastAt);
    while (this.samples.length > 0 && this.samples[0]!.at < from) this.samples.shift();
    if (fresh.length === 0) return;
    this.lastAt = Math.max(...fresh.map((e) => e.at));
    for (const e of fresh) {
      const total = e.promptTokensTotal;
      if (typeof total !== 'number') continue;
      const before = this.promptTotals.get(e.upstream);
      if (before !== undefined && total < before) this.restart();
      this.promptTotals.set(e.upstream, total);
    }
    const sum = (f: (e: EngineReading) => number | null) => {
      const xs = engines.map(f).filter((v): v is number => v !== null);
      return xs.length ? xs.reduce((a, b) => a + b, 0) : null;
    };
    const running = sum((e) => e.running);
    const waiting = sum((e) => e.waiting);
    const kvs = engines.map((e) => e.kvCacheUsage).filter((v): v is number => v !== null);
    const kv = kvs.length ? kvs.reduce((a, b) => a + b, 0) / kvs.length : null;
    if (running === null) return;
    this.samples.push({ at: this.lastAt, running, kv });
    if (running > this.maxRunning) {
      this.maxRunning = running;
      this.sightings = 0;
      this.slots = null;
    }
    if ((waiting ?? 0) >= 1 && (kv === null || kv < KV_ROOM)) {
      this.queued++;
      if (running === this.maxRunning) this.sightings++;
    }
    if (this.slots === null && this.sightings >= SLOT_SIGHTINGS && this.sightings >= PINNED_SHARE * this.queued && this.maxRunning > 0) this.slots = this.maxRunning;
  }

  /** An engine restarted: what was read of the old one says nothing of the new one. */
  private restart(): void {
    this.maxRunning = 0;
    this.sightings = 0;
    this.queued = 0;
    this.slots = null;
    this.samples = [];
  }

  limits(): EngineLimits {
    const withKv = this.samples.filter((s) => s.kv !== null);
    const kvMean = withKv.reduce((a, s) => a + s.kv!, 0) / Math.max(1, withKv.length);
    const runMean = withKv.reduce((a, s) => a + s.running, 0) / Math.max(1, withKv.length);
    return {
      slots: this.slots,
      kvSequences: withKv.length > 0 && kvMean >= KV_MIN && runMean > 0 ? runMean / kvMean : null,
    };
  }
}
