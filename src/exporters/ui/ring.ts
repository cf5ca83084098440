/**
 * Fixed-size rings of time slots for the status page, indexed by absolute slot number
 * (floor(unix ms / slot length)): a slot that has left the window is simply overwritten, so
 * memory is allocated once, when a ring is made, and never grows with uptime or traffic.
 */

type Numbers = Float32Array | Float64Array | Uint32Array;

/** `fields` numbers per slot, `slots` slots: the last `slots` slot numbers are kept. */
export class Ring<T extends Numbers = Float64Array> {
  readonly data: T;
  /** The newest slot number the ring has moved to (-Infinity: none yet). */
  private newest = -Infinity;

  constructor(
    readonly slots: number,
    readonly fields: number,
    make: (length: number) => T,
    /** What an empty slot holds: 0 for counts, NaN for "no value". */
    private readonly blank = 0,
  ) {
    this.data = make(slots * fields);
    this.data.fill(blank);
  }

  get last(): number {
    return this.newest;
  }

  private base(slot: number): number {
    return (((slot % this.slots) + this.slots) % this.slots) * this.fields;
  }

  /** Moves the window to end at `slot`, blanking every slot skipped since the last move. */
  advance(slot: number): void {
    if (slot <= this.newest) return;
    const from = Math.max(this.newest + 1, slot - this.slots + 1);
    for (let s = from; s <= slot; s++) {
      const b = this.base(s);
      this.data.fill(this.blank, b, b + this.fields);
    }
    this.newest = slot;
  }

  /** Whether `slot` is inside the window (not yet overwritten). */
  holds(slot: number): boolean {
    return slot <= this.newest && slot > this.newest - this.slots;
  }

  add(slot: number, field: number, value: number): void {
    this.advance(slot);
    if (!this.holds(slot)) return; // older than the window: nowhere to count it
    const i = this.base(slot) + field;
    this.data[i] = this.data[i]! + value;
  }

  set(slot: number, field: number, value: number): void {
    this.advance(slot);
    if (this.holds(slot)) this.data[this.base(slot) + field] = value;
  }

  get(slot: number, field: number): number {
    return this.holds(slot) ? this.data[this.base(slot) + field]! : this.blank;
  }

  /** Sum of `field` over slots [from, to], those still held. */
  sum(field: number, from: number, to: number): number {
    let s = 0;
    for (let k = Math.max(from, this.newest - this.slots + 1); k <= Math.min(to, this.newest); k++) s += this.data[this.base(k) + field]!;
    return s;
  }

  get bytes(): number {
    return this.data.byteLength;
  }
}

/**
 * Raw observations of one measurement, per slot: every value up to `cap` a slot, beyond
 * that a uniform sample (reservoir, algorithm R) with the slot's true count kept beside it,
 * so a busy second is weighted by what it really held when slots are merged.
 */
export class SampleRing {
  private readonly values: Float32Array;
  private readonly kept: Uint16Array;
  private readonly seen: Float64Array;
  private readonly ring: Ring<Float64Array>;

  constructor(
    readonly slots: number,
    readonly cap: number,
    private readonly random: () => number = Math.random,
  ) {
    this.values = new Float32Array(slots * cap);
    this.kept = new Uint16Array(slots);
    this.seen = new Float64Array(slots);
    // The ring only tracks which slot numbers are held; counts live in kept/seen.
    this.ring = new Ring(slots, 1, (n) => new Float64Array(n));
  }

  private index(slot: number): number {
    return ((slot % this.slots) + this.slots) % this.slots;
  }

  private moveTo(slot: number): void {
    const before = this.ring.last;
    if (slot <= before) return;
    const from = Math.max(before + 1, slot - this.slots + 1);
    for (let s = from; s <= slot; s++) {
      const i = this.index(s);
      this.kept[i] = 0;
      this.seen[i] = 0;
    }
    this.ring.advance(slot);
  }

  observe(slot: number, value: number): void {
    if (!Number.isFinite(value)) return;
    this.moveTo(slot);
    if (!this.ring.holds(slot)) return;
    const i = this.index(slot);
    const n = ++this.seen[i]!;
    if (this.kept[i]! < this.cap) {
      this.values[i * this.cap + this.kept[i]!] = value;
      this.kept[i]!++;
      return;
    }
    const j = Math.floor(this.random() * n);
    if (j < this.cap) this.values[i * this.cap + j] = value;
  }

  /** How many values slots [from, to] saw (not only kept). */
  count(from: number, to: number): number {
    let n = 0;
    for (let s = from; s <= to; s++) if (this.ring.holds(s)) n += this.seen[this.index(s)]!;
    return n;
  }

  /**
   * The q-quantiles (each in (0, 1]) of what slots [from, to] saw: the smallest value whose
   * cumulative weight reaches q of the total. NaN for each when the slots saw nothing.
   */
  quantiles(from: number, to: number, qs: readonly number[]): number[] {
    const vals: number[] = [];
    const wts: number[] = [];
    for (let s = from; s <= to; s++) {
      if (!this.ring.holds(s)) continue;
      const i = this.index(s);
      const k = this.kept[i]!;
      if (k === 0) continue;
      const w = this.seen[i]! / k;
      for (let j = 0; j < k; j++) {
        vals.push(this.values[i * this.cap + j]!);
        wts.push(w);
      }
    }
    if (vals.length === 0) return qs.map(() => NaN);
    const order = Array.from(vals.keys()).sort((a, b) => vals[a]! - vals[b]!);
    let total = 0;
    for (const w of wts) total += w;
    const out: number[] = [];
    let acc = 0;
    let at = 0;
    for (const q of qs) {
      const rank = q * total * (1 - 1e-12); // float sums must not miss the last value
      while (at < order.length - 1 && acc + wts[order[at]!]! < rank) acc += wts[order[at++]!]!;
      out.push(vals[order[at]!]!);
    }
    return out;
  }

  get bytes(): number {
    return this.values.byteLength + this.kept.byteLength + this.seen.byteLength + this.ring.bytes;
  }
}
