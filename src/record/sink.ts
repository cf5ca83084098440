/**
 * The proxy side of the metrics hand-off. A proxy loop counts starts and encodes finished
 * records into one buffer (record-codec.ts); at most every FLUSH_MS the batch goes to the
 * metrics side in one message: posted to the metrics thread of this process, or sent to the
 * cluster primary over IPC under --workers (see cluster/). One message per batch, never
 * per request or per chunk.
 */
import type { RequestRecord, WireBatch } from './record.js';
import { RecordEncoder } from './codec.js';
import { InputCollector, type RequestInput } from './input.js';
import { monitorProxyLoop, type ProxyLoopMonitor, type ProxyLoopSample } from './loop.js';
import { ROUTE_LABELS, routeByLabel, routeLabelIndex } from './routes.js';

/** By route index: whether the route is a metered generation route (chat, completions). */
const GENERATION = ROUTE_LABELS.map((label) => routeByLabel(label).metered);

export const LOOP_SAMPLE_MS = 5000;
/**
 * A quiet loop still sends a (empty) batch this often: the heartbeat /healthz judges it by.
 * It goes from this loop's own timer, so a loop that is wedged sends none.
 */
export const HEARTBEAT_MS = 1000;
/**
 * A batch at most this often: a message (and a wake-up of the metrics side) costs tens of µs,
 * and the in-flight gauge lags by up to this much.
 */
export const FLUSH_MS = 20;

export interface RecordSink {
  /**
   * A request arrived on `route` (a ROUTE_LABELS value). Answers this loop's requests in
   * flight, itself included: of generation requests for a generation route, else of all.
   */
  started(route: string): number;
  /** A generation request's model was read from its body (once per request, before it goes upstream). */
  admitted(model: string): void;
  /** This loop's requests in flight now. */
  readonly inFlight: number;
  /** Of those, the generation requests (chat, completions): what in_flight_le bands. */
  readonly generationInFlight: number;
  /** `input`: the request's body and session, only while a reader of prompt shapes is on (input.ts). */
  finished(record: RequestRecord, input?: RequestInput | null): void;
  /** A streamed generation request, from its model's read until it finishes: counted silent while no byte came for `stallAfterMs`. */
  watch(stream: WatchedStream): void;
  unwatch(stream: WatchedStream): void;
  /** --stall-after, ms: what silent means for watched streams. */
  stallAfterMs: number;
  /** This loop's requests in flight per upstream (set by the proxy): each batch carries them, for the engine-release check (metrics/waste/). */
  upstreamsInFlight?: (() => number[]) | null;
}

/** A stream in flight as the silent count reads it (the exchange): its raw model name and when its last byte came. */
export interface WatchedStream {
  readonly model: string;
  /** performance.now() of its last upstream byte, or of its start while none came. */
  lastByteAt(): number;
}

/** Silent streams are counted at most this often (a batch carries the last count). */
const SILENT_COUNT_MS = 1000;

/** Batches one proxy loop's starts and records; `deliver` carries each batch away. */
export class BatchingSink implements RecordSink {
  private readonly encoder = new RecordEncoder();
  private readonly inputs = new InputCollector();
  private readonly startedByRoute = new Array<number>(ROUTE_LABELS.length).fill(0);
  private live = 0;
  private generation = 0;
  /** Models read since the last batch (admitted), per raw name. */
  private admittedByModel = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;
  private readonly watched = new Set<WatchedStream>();
  stallAfterMs = 10_000;
  upstreamsInFlight: (() => number[]) | null = null;
  /** The last count of silent streams per raw model name (null: none silent), and when it was made. */
  private silent: [string, number][] | null = null;
  private silentAt = -SILENT_COUNT_MS;
  private readonly loop: ProxyLoopMonitor;
  private readonly loopTimer: NodeJS.Timeout;
  private readonly beatTimer: NodeJS.Timeout;

  constructor(
    private readonly source: number,
    private readonly deliver: (batch: WireBatch) => void,
    sample: (s: ProxyLoopSample) => void,
  ) {
    // The proxy loop's own delay can only be measured on the proxy loop.
    this.loop = monitorProxyLoop();
    this.loopTimer = setInterval(() => sample(this.loop.sample()), LOOP_SAMPLE_MS);
    this.loopTimer.unref();
    this.beatTimer = setInterval(() => {
      if (!this.timer && performance.now() - this.lastFlush >= HEARTBEAT_MS / 2) this.flush();
    }, HEARTBEAT_MS);
    this.beatTimer.unref();
  }

  get inFlight(): number {
    return this.live;
  }

  get generationInFlight(): number {
    return this.generation;
  }

  started(route: string): number {
    const i = routeLabelIndex(route);
    this.startedByRoute[i]!++;
    this.live++;
    this.schedule();
    return GENERATION[i] ? ++this.generation : this.live;
  }

  admitted(model: string): void {
    this.admittedByModel.set(model, (this.admittedByModel.get(model) ?? 0) + 1);
    this.schedule();
  }

  finished(record: RequestRecord, input?: RequestInput | null): void {
    this.live--;
    if (GENERATION[routeLabelIndex(record.route)]) this.generation--;
    if (input) this.inputs.add(this.encoder.count, input);
    this.encoder.add(record);
    this.schedule();
  }

  watch(stream: WatchedStream): void {
    this.watched.add(stream);
  }

  unwatch(stream: WatchedStream): void {
    this.watched.delete(stream);
  }

  /** Watched streams with no byte for stallAfterMs, per raw model name: counted once a second at most. */
  private silentByModel(now: number): [string, number][] | null {
    if (now - this.silentAt < SILENT_COUNT_MS) return this.silent;
    this.silentAt = now;
    let by: Map<string, number> | null = null;
    for (const s of this.watched) {
      if (now - s.lastByteAt() < this.stallAfterMs) continue;
      by ??= new Map();
      by.set(s.model, (by.get(s.model) ?? 0) + 1);
    }
    return (this.silent = by ? [...by] : null);
  }

  private lastFlush = -FLUSH_MS;

  /**
   * At most one batch per FLUSH_MS, but no waiting after a quiet spell: the first change
   * since the last batch goes out on the next timer tick, so the in-flight gauge follows
   * sparse traffic at once and busy traffic within FLUSH_MS.
   */
  private schedule(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => this.flush(), Math.max(0, this.lastFlush + FLUSH_MS - performance.now()));
  }

  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const now = (this.lastFlush = performance.now());
    const byModel = this.admittedByModel.size > 0 ? [...this.admittedByModel] : null;
    if (byModel) this.admittedByModel.clear();
    this.deliver({
      source: this.source, records: this.encoder.take(), inFlight: this.live, generationInFlight: this.generation,
      startedByRoute: [...this.startedByRoute], startedByModel: byModel, inputs: this.inputs.take(), silentByModel: this.silentByModel(now),
      upstreamsInFlight: this.upstreamsInFlight?.() ?? null,
    });
  }

  stop(): void {
    clearInterval(this.loopTimer);
    clearInterval(this.beatTimer);
    this.loop.stop();
    this.flush();
  }
}
