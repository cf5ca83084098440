/**
 * The energy ledger: GPU energy and request work put side by side in one-second buckets, and
 * each bucket split once it is complete (docs/energy.md, "Attribution").
 *
 * - Energy arrives per GPU as an increase over a span of time (two readings of its counter) and
 *   is spread over the buckets of that span, with the GPU-seconds it covers. A GPU serves the
 *   upstreams the GPU-engine join names.
 * - Work arrives per request when it ends, and is spread over the request's life: its prefill
 *   work (input tokens over the prefill rate) over its time to first token, its output tokens over
 *   the rest. So a minute-long stream weighs on every second it ran, not on the one it ended in.
 * - A bucket is split when its energy is in (every GPU that reports has read past its end) and
 *   every request in flight during it has ended and been handed in: no request still in flight
 *   started before its end (in-flight.ts). Requests of a few seconds keep the counters a few
 *   seconds behind; a request that never seems to end holds a bucket at most MAX_HOLD_MS.
 * - Split: each upstream's energy goes to its models by their share of its work in the bucket
 *   (`busy`, parts() below); an upstream with no request in flight in the bucket spent it
 *   `idle`, kept apart with an empty model, never spread over tokens. A GPU shared by several
 *   upstreams is split equally between those that had requests in flight (all of them when none did). Energy or work that arrives for a bucket already
 *   split goes to the oldest open one: totals stay exact, only the split of that moment shifts.
 *
 * Pure: times are Unix ms handed in, nothing here reads a clock.
 */

export const BUCKET_MS = 1000;
/** The longest a bucket waits for the requests in flight during it. */
export const MAX_HOLD_MS = 10 * 60_000;
/** After this, a bucket's energy is taken as complete even if a GPU has not read past it (it went silent). */
export const ENERGY_WAIT_MS = 60_000;
/** How much earlier than its batch's arrival a request may have started (the proxy sends a batch every 20 ms). */
export const START_SLACK_MS = 200;

export interface WorkItem {
  upstream: string;
  model: string;
  /** Unix ms the proxy received the request. */
  startMs: number;
  /** Time to first token in ms; null: none seen (non-streamed, failed). */
  ttftMs: number | null;
  /** Unix ms it ended (start + E2E, or when its record arrived). */
  endMs: number;
  /** Seconds of the engine's time its prefill took: input tokens over the prefill rate (0: not counted). */
  prefillSeconds: number;
  outputTokens: number;
  /** Output tokens of a request that met every SLO. */
  goodOutputTokens: number;
  /** Why the request's work went to nobody (metrics/waste/), null when it did not: its shares carry it apart. */
  cause?: string | null;
}

/** One piece of a split bucket. */
export interface Share {
  /** The bucket's start, Unix ms. */
  at: number;
  upstream: string;
  /** '' for idle. */
  model: string;
  state: 'busy' | 'idle';
  joules: number;
  gpuSeconds: number;
  outputTokens: number;
  goodOutputTokens: number;
  /** The waste cause of the requests this share is for (WorkItem.cause); null: useful work, or idle. */
  cause: string | null;
}

interface Tally {
  model: string;
  cause: string | null;
  /** Seconds of prefill: input tokens over the prefill rate. */
  prefill: number;
  /** Seconds its requests were in flight in the bucket (the split when neither prefill nor output tokens fell in it). */
  inFlight: number;
  outputTokens: number;
  goodOutputTokens: number;
}

interface Bucket {
  /** gpu → energy, GPU-seconds and the upstreams it served. */
  gpus: Map<string, { joules: number; seconds: number; upstreams: readonly string[] }>;
  /** upstream → model and cause (tallyKey) → work. */
  work: Map<string, Map<string, Tally>>;
}

export class EnergyLedger {
  private readonly buckets = new Map<number, Bucket>();
  /** Every bucket before this index is split. */
  private open = -Infinity;
  /** gpu → Unix ms its energy is in through; the GPUs that read within ENERGY_WAIT_MS decide completeness. */
  private readonThrough = new Map<string, number>();
  /** Upstreams that have had energy: only theirs get token shares (a remote upstream without GPUs has no energy per token). */
  private readonly powered = new Set<string>();

  /** A GPU's energy increase over [fromMs, toMs] (its two readings), and the upstreams it serves now. */
  addEnergy(gpu: string, upstreams: readonly string[], fromMs: number, toMs: number, joules: number): void {
    this.readonThrough.set(gpu, Math.max(this.readonThrough.get(gpu) ?? -Infinity, toMs));
    for (const u of upstreams) this.powered.add(u);
    const seconds = Math.max(0, toMs - fromMs) / 1000;
    this.spread(fromMs, toMs, (b, f) => {
      const e = b.gpus.get(gpu);
      if (e) {
        e.joules += joules * f;
        e.seconds += seconds * f;
        e.upstreams = upstreams;
      } else b.gpus.set(gpu, { joules: joules * f, seconds: seconds * f, upstreams });
    });
  }

  /** A finished request's work, spread over its life; it also counts toward the buckets it overlapped having ended. */
  addWork(w: WorkItem): void {
    const end = Math.max(w.endMs, w.startMs);
    const firstToken = w.ttftMs !== null && w.ttftMs > 0 ? Math.min(end, w.startMs + w.ttftMs) : w.startMs;
    const decodeFrom = firstToken < end ? firstToken : w.startMs;
    // In flight: the bucket is busy for its upstream, whatever work fell in it (a request waiting for its first token).
    this.spread(w.startMs, end, (b, f) => (this.tally(b, w).inFlight += ((end - w.startMs) / 1000) * f));
    this.spread(w.startMs, firstToken > w.startMs ? firstToken : end, (b, f) => (this.tally(b, w).prefill += w.prefillSeconds * f));
    this.spread(decodeFrom, end, (b, f) => {
      const t = this.tally(b, w);
      t.outputTokens += w.outputTokens * f;
      t.goodOutputTokens += w.goodOutputTokens * f;
    });
  }

  /**
   * Splits every complete bucket, oldest first. `inFlightSince`: when the oldest request still
   * in flight started (in-flight.ts), null when none is: a bucket that ends after it waits.
   */
  settle(nowMs: number, inFlightSince: number | null): Share[] {
    const out: Share[] = [];
    const energyThrough = this.energyThrough(nowMs);
    for (const i of [...this.buckets.keys()].sort((a, b) => a - b)) {
      const end = (i + 1) * BUCKET_MS;
      const b = this.buckets.get(i)!;
      if (end > energyThrough && nowMs < end + ENERGY_WAIT_MS) break;
      const ended = inFlightSince === null || end <= inFlightSince - START_SLACK_MS || nowMs >= end + MAX_HOLD_MS;
      if (!ended) break;
      this.buckets.delete(i);
      this.open = i + 1;
      split(i * BUCKET_MS, b, this.powered, out);
    }
    return out;
  }

  /** Buckets not yet split (tests; bounded by MAX_HOLD_MS of seconds). */
  get pending(): number {
    return this.buckets.size;
  }

  private energyThrough(nowMs: number): number {
    let through = Infinity;
    for (const [gpu, t] of this.readonThrough) {
      if (t < nowMs - ENERGY_WAIT_MS) this.readonThrough.delete(gpu);
      else through = Math.min(through, t);
    }
    return through === Infinity ? nowMs : through;
  }

  private tally(b: Bucket, w: WorkItem): Tally {
    let models = b.work.get(w.upstream);
    if (!models) b.work.set(w.upstream, (models = new Map()));
    const cause = w.cause ?? null;
    const key = cause === null ? w.model : `${w.model}\u0000${cause}`;
    let t = models.get(key);
    if (!t) models.set(key, (t = { model: w.model, cause, prefill: 0, inFlight: 0, outputTokens: 0, goodOutputTokens: 0 }));
    return t;
  }

  /** Calls `add` for each bucket [fromMs, toMs] overlaps, with the share of the span in it; an empty span: its one bucket, whole. */
  private spread(fromMs: number, toMs: number, add: (b: Bucket, fraction: number) => void): void {
    if (!(toMs > fromMs)) {
      add(this.bucket(this.index(fromMs)), 1);
      return;
    }
    const span = toMs - fromMs;
    for (let i = this.index(fromMs); i <= this.index(toMs - 1e-6); i++) {
      const overlap = Math.min(toMs, (i + 1) * BUCKET_MS) - Math.max(fromMs, i * BUCKET_MS);
      if (overlap > 0) add(this.bucket(i), overlap / span);
    }
  }

  private index(ms: number): number {
    return Math.floor(ms / BUCKET_MS);
  }

  /** The bucket at index i; one already split hands its part to the oldest open bucket. */
  private bucket(i: number): Bucket {
    const at = Math.max(i, this.open);
    let b = this.buckets.get(at);
    if (!b) this.buckets.set(at, (b = { gpus: new Map(), work: new Map() }));
    return b;
  }
}

/**
 * A model's part of an upstream's second: its prompt tokens take the share of the second their
 * prefill needed (prefill seconds, at most the whole second), shared by prefill seconds; its
 * output tokens share the rest, by output tokens (every sequence of a batch gets a token per
 * step, so within one second tokens go with the time a sequence held its slot). A second in
 * which requests were in flight but neither prefilled nor produced a token (waiting for their
 * first token) is still busy: it goes by the time each model's requests were in flight.
 * null: no request of the upstream was in flight, the second is idle.
 */
function parts(models: ReadonlyMap<string, Tally>): Map<string, number> | null {
  if (models.size === 0) return null;
  let prefill = 0;
  let output = 0;
  let inFlight = 0;
  for (const t of models.values()) {
    prefill += t.prefill;
    output += t.outputTokens;
    inFlight += t.inFlight;
  }
  const out = new Map<string, number>();
  if (!(prefill > 0) && !(output > 0)) {
    for (const [key, t] of models) out.set(key, inFlight > 0 ? t.inFlight / inFlight : 1 / models.size);
    return out;
  }
  const f = output > 0 ? Math.min(1, prefill / (BUCKET_MS / 1000)) : 1;
  for (const [key, t] of models) out.set(key, (prefill > 0 ? (f * t.prefill) / prefill : 0) + (output > 0 ? ((1 - f) * t.outputTokens) / output : 0));
  return out;
}

/** One complete bucket into shares: each upstream's energy to its models by their parts, or idle. */
function split(at: number, b: Bucket, powered: ReadonlySet<string>, out: Share[]): void {
  const partsOf = new Map<string, Map<string, number> | null>();
  for (const [u, models] of b.work) partsOf.set(u, parts(models));
  const energy = new Map<string, { joules: number; seconds: number }>();
  for (const g of b.gpus.values()) {
    if (g.upstreams.length === 0) continue; // a GPU tied to no upstream: counted per GPU only
    // A GPU of several upstreams: equally between those that worked this second, or all of them.
    const working = g.upstreams.filter((u) => partsOf.get(u));
    const to = working.length > 0 ? working : g.upstreams;
    for (const u of to) {
      const e = energy.get(u) ?? { joules: 0, seconds: 0 };
      e.joules += g.joules / to.length;
      e.seconds += g.seconds / to.length;
      energy.set(u, e);
    }
  }
  const upstreams = new Set([...energy.keys(), ...[...b.work.keys()].filter((u) => powered.has(u))]);
  for (const u of upstreams) {
    const e = energy.get(u) ?? { joules: 0, seconds: 0 };
    const shares = partsOf.get(u);
    if (!shares) {
      if (e.joules > 0 || e.seconds > 0) out.push({ at, upstream: u, model: '', state: 'idle', joules: e.joules, gpuSeconds: e.seconds, outputTokens: 0, goodOutputTokens: 0, cause: null });
      continue;
    }
    for (const [key, t] of b.work.get(u)!) {
      const f = shares.get(key)!;
      out.push({ at, upstream: u, model: t.model, state: 'busy', joules: e.joules * f, gpuSeconds: e.seconds * f, outputTokens: t.outputTokens, goodOutputTokens: t.goodOutputTokens, cause: t.cause });
    }
  }
}
