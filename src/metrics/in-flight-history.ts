/**
 * One proxy loop's generation requests in flight over time, as its batches reported them (wall-clock ms of
 * arrival on the metrics side). Under --workers the metrics side asks each other loop what its
 * count was when a record's first token arrived: a record is decoded only when its request
 * ends, seconds or minutes later, when the other loops' counts have long moved on.
 *
 * Bounded: a fixed ring of samples, a new one only when the count changed, and samples closer
 * than COALESCE_MS merged into the latest, so it holds at least RING × COALESCE_MS of history
 * (over 2.7 minutes at the busiest) and usually far more. Older than that, the oldest sample
 * answers.
 */
const RING = 16_384;
const COALESCE_MS = 10;

export class InFlightHistory {
  private readonly times = new Float64Array(RING);
  private readonly values = new Int32Array(RING);
  /** Index of the newest sample; size samples end there. */
  private head = -1;
  private size = 0;

  note(now: number, inFlight: number): void {
    if (this.size > 0) {
      const h = this.head;
      if (this.values[h] === inFlight) return;
      if (now - this.times[h]! < COALESCE_MS) {
        this.values[h] = inFlight;
        return;
      }
    }
    this.head = (this.head + 1) % RING;
    this.times[this.head] = now;
    this.values[this.head] = inFlight;
    if (this.size < RING) this.size++;
  }

  /** The count as last reported at or before `t` (the oldest known, if `t` is older; 0 if none). */
  at(t: number): number {
    if (this.size === 0) return 0;
    // Binary search over the ring in age order: i = 0 is the oldest sample.
    const oldest = (this.head - this.size + 1 + RING) % RING;
    const idx = (i: number) => (oldest + i) % RING;
    if (t < this.times[idx(0)]!) return this.values[idx(0)]!;
    let lo = 0;
    let hi = this.size - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (this.times[idx(mid)]! <= t) lo = mid;
      else hi = mid - 1;
    }
    return this.values[idx(lo)]!;
  }

  get latest(): number {
    return this.size === 0 ? 0 : this.values[this.head]!;
  }
}
