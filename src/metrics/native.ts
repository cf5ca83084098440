/**
 * Prometheus native histograms (sparse exponential buckets), one series at a time, written
 * from the exposition spec (client_model metrics.proto, the Prometheus native-histogram docs):
 *
 * - schema s: bucket i holds (base^(i-1), base^i], base = 2^(2^-s); s from -4 to 8;
 * - values with |v| <= zeroThreshold go to the zero bucket; negative values mirror positive;
 * - on the wire, populated buckets are runs (spans: offset, length) with counts as deltas.
 *
 * At most `maxBuckets` buckets are kept, the way client_golang keeps them: when an observation
 * makes one too many, the series resets if it has lived `minResetSeconds` (the triggering
 * observation is kept); else the zero bucket widens to swallow the bucket nearest zero if that
 * stays within `maxZeroThreshold`; else the schema drops by one (every two buckets merge).
 *
 * observe() is a few arithmetic operations and one Map update: no allocation per observation.
 */

export const MIN_SCHEMA = -4;
export const MAX_SCHEMA = 8;
/** client_golang's default: below this a value is zero for every practical purpose. */
export const DEFAULT_ZERO_THRESHOLD = 2 ** -128;

export interface NativeOptions {
  schema: number;
  maxBuckets: number;
  /** 0: never reset, only widen the zero bucket or lower the schema. */
  minResetSeconds: number;
  zeroThreshold: number;
  maxZeroThreshold: number;
  /** Seconds on any monotonic-enough clock (tests pass their own). */
  now: () => number;
}

export const DEFAULT_NATIVE: Omit<NativeOptions, 'schema'> = {
  maxBuckets: 160,
  minResetSeconds: 3600,
  zeroThreshold: DEFAULT_ZERO_THRESHOLD,
  // Latencies in seconds: a microsecond is as good as zero.
  maxZeroThreshold: 1e-6,
  now: () => Date.now() / 1000,
};

/**
 * The largest schema whose bucket growth factor does not exceed `factor` (client_golang's
 * NativeHistogramBucketFactor): 1.1 gives schema 3 (each bucket at most 2^(1/8) ≈ 1.0905 wide).
 */
export function schemaForFactor(factor: number): number {
  if (!(factor > 1) || !Number.isFinite(factor)) throw new RangeError(`bucket factor must be a number above 1, got ${factor}`);
  const s = -Math.floor(Math.log2(Math.log2(factor))) + 0; // + 0: never -0
  return Math.min(MAX_SCHEMA, Math.max(MIN_SCHEMA, s));
}

/**
 * For schema s > 0: bounds[s][j] = 2^(j/2^s - 1), j = 0..2^s-1, the lower fractions of the
 * sub-buckets of one power of two, against which a frexp fraction (in [0.5, 1)) is searched.
 */
// Equivalent mutant: an initial element only fills index 0, which no schema (1..8) reads.
const FRACTION_BOUNDS: Float64Array[] = [];
for (let s = 1; s <= MAX_SCHEMA; s++) {
  const n = 1 << s;
  const b = new Float64Array(n);
  for (let j = 0; j < n; j++) b[j] = 2 ** (j / n - 1); // `j <= n`: a Float64Array ignores the write past its end (equivalent mutant)
  FRACTION_BOUNDS[s] = b;
}

// frexp without allocation: the exponent and mantissa straight from the IEEE-754 bits.
const f64 = new Float64Array(1);
const u32 = new Uint32Array(f64.buffer);
// `true` for the test is equivalent on little-endian hosts (x64, arm64: HI is 1 there); only a big-endian one tells.
const HI = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1 ? 1 : 0;

/**
 * The bucket index of a positive finite value at `schema`. Normal doubles only (values
 * below 2^-1022 are far under any zero threshold).
 */
export function bucketIndex(v: number, schema: number): number {
  f64[0] = v;
  const hi = u32[HI]!;
  const exp = ((hi >>> 20) & 0x7ff) - 1022; // v = frac * 2^exp, frac in [0.5, 1)
  if (schema > 0) {
    u32[HI] = (hi & 0x800fffff) | (1022 << 20);
    const frac = f64[0];
    const bounds = FRACTION_BOUNDS[schema]!;
    // Smallest j with bounds[j] >= frac (binary search over at most 256 entries).
    let lo = 0;
    let hiIdx = bounds.length;
    while (lo < hiIdx) {
      const mid = (lo + hiIdx) >>> 1;
      if (bounds[mid]! < frac) lo = mid + 1;
      else hiIdx = mid;
    }
    return lo + (exp - 1) * bounds.length;
  }
  // frac == 0.5 exactly: v is a power of two, the upper bound of bucket exp-1.
  const key = (hi & 0x000fffff) === 0 && u32[1 - HI] === 0 ? exp - 1 : exp;
  if (schema === 0) return key; // a shortcut: with shift 0 the line below gives key too (equivalent mutant)
  const shift = -schema;
  return (key + (1 << shift) - 1) >> shift;
}

/** The upper bound of bucket `index` at `schema`: base^index. */
export function bucketUpperBound(index: number, schema: number): number {
  if (schema > 0) {
    const n = 1 << schema;
    const whole = Math.floor(index / n);
    return FRACTION_BOUNDS[schema]![index - whole * n]! * 2 * 2 ** whole;
  }
  return 2 ** (index * 2 ** -schema);
}

export interface BucketSpan {
  offset: number;
  length: number;
}

/** What the exposition needs of one series, in the wire's shape. */
export interface NativeSnapshot {
  schema: number;
  zeroThreshold: number;
  zeroCount: number;
  count: number;
  sum: number;
  positiveSpans: BucketSpan[];
  positiveDeltas: number[];
  negativeSpans: BucketSpan[];
  negativeDeltas: number[];
  /** Unix seconds when this series began counting (start, or last reset). */
  createdSeconds: number;
}

/** client_golang keeps up to 10 exemplars per native histogram; a few recent ones link to traces just as well. */
const MAX_NATIVE_EXEMPLARS = 4;

export class NativeSeries {
  schema: number;
  zeroThreshold: number;
  zeroCount = 0;
  count = 0;
  sum = 0;
  readonly positive = new Map<number, number>();
  readonly negative = new Map<number, number>();
  /** How many times the bucket limit reset this series (for tests and a curious operator). */
  resets = 0;
  private lastReset: number;
  private createdSeconds: number;

  constructor(private readonly opts: NativeOptions) {
    this.schema = opts.schema;
    this.zeroThreshold = opts.zeroThreshold;
    this.lastReset = opts.now();
    this.createdSeconds = Date.now() / 1000;
  }

  get buckets(): number {
    return this.positive.size + this.negative.size;
  }

  /** The latest traced observations (at most MAX_NATIVE_EXEMPLARS, oldest first), for the protobuf exposition. */
  exemplars: { traceId: string; value: number; timestamp: number }[] | null = null;

  observe(v: number, traceId: string | null = null, timestampSeconds = 0): void {
    // As the classic series (histogram.ts): NaN and ±Inf are not observations at all, so the
    // two histograms of one measurement always hold the same count.
    if (!Number.isFinite(v)) return;
    if (traceId !== null) {
      const ex = (this.exemplars ??= []);
      if (ex.length === MAX_NATIVE_EXEMPLARS) ex.shift();
      ex.push({ traceId, value: v, timestamp: timestampSeconds });
    }
    this.count++;
    this.sum += v;
    this.place(v);
    if (this.positive.size + this.negative.size > this.opts.maxBuckets) this.limit(v);
  }

  private place(v: number): void {
    const abs = v < 0 ? -v : v; // `<=`: only 0 differs (abs -0 or 0), in the zero bucket either way
    if (abs <= this.zeroThreshold) {
      this.zeroCount++;
      return;
    }
    const map = v > 0 ? this.positive : this.negative; // `>=`: v is never 0 here (zeroThreshold >= 0)
    const i = bucketIndex(abs, this.schema);
    map.set(i, (map.get(i) ?? 0) + 1);
  }

  private limit(v: number): void {
    if (this.opts.minResetSeconds > 0 && this.opts.now() - this.lastReset >= this.opts.minResetSeconds) {
      this.reset();
      this.count = 1;
      this.sum = v;
      this.place(v);
      return;
    }
    while (this.positive.size + this.negative.size > this.opts.maxBuckets) {
      if (!this.widenZeroBucket() && !this.halveResolution()) return;
    }
  }

  /** Back to the starting schema and zero threshold, every count at zero. */
  reset(): void {
    this.positive.clear();
    this.negative.clear();
    this.zeroCount = 0;
    this.count = 0;
    this.sum = 0;
    this.schema = this.opts.schema;
    this.zeroThreshold = this.opts.zeroThreshold;
    this.lastReset = this.opts.now();
    this.createdSeconds = Date.now() / 1000;
    this.resets++;
  }

  /** Moves the bucket nearest zero (either sign) into the zero bucket, if the threshold may grow that far. */
  private widenZeroBucket(): boolean {
    // A shortcut (removing it, or `>`, is equivalent): every populated bucket's upper bound is above
    // zeroThreshold, so at or past the maximum the threshold test below refuses anyway.
    if (this.zeroThreshold >= this.opts.maxZeroThreshold) return false;
    let nearest = Infinity;
    // `<=` for `<` (both loops) is equivalent: a tie keeps the same key.
    for (const k of this.positive.keys()) if (k < nearest) nearest = k;
    for (const k of this.negative.keys()) if (k < nearest) nearest = k;
    // Unreachable (equivalent mutants): limit() runs only with more buckets than maxBuckets >= 1.
    if (nearest === Infinity) return false;
    const threshold = bucketUpperBound(nearest, this.schema);
    if (threshold > this.opts.maxZeroThreshold) return false;
    // Every bucket at or below the new threshold joins the zero bucket.
    for (const map of [this.positive, this.negative]) {
      for (const [k, c] of map) {
        if (k <= nearest) {
          this.zeroCount += c;
          map.delete(k);
        }
      }
    }
    this.zeroThreshold = threshold;
    return true;
  }

  /** schema − 1: buckets 2k−1 and 2k become bucket k (index ⌈i/2⌉). */
  private halveResolution(): boolean {
    if (this.schema <= MIN_SCHEMA) return false;
    this.schema--;
    for (const map of [this.positive, this.negative]) {
      const merged = new Map<number, number>();
      for (const [k, c] of map) {
        const nk = (k + 1) >> 1;
        merged.set(nk, (merged.get(nk) ?? 0) + c);
      }
      map.clear();
      for (const [k, c] of merged) map.set(k, c);
    }
    return true;
  }

  snapshot(): NativeSnapshot {
    const pos = spansOf(this.positive);
    const neg = spansOf(this.negative);
    // An empty native histogram still needs something that marks it native to a parser
    // that looks for spans (client_golang sends one empty span too).
    if (pos.spans.length === 0 && neg.spans.length === 0) pos.spans.push({ offset: 0, length: 0 });
    return {
      schema: this.schema,
      zeroThreshold: this.zeroThreshold,
      zeroCount: this.zeroCount,
      count: this.count,
      sum: this.sum,
      positiveSpans: pos.spans,
      positiveDeltas: pos.deltas,
      negativeSpans: neg.spans,
      negativeDeltas: neg.deltas,
      createdSeconds: this.createdSeconds,
    };
  }
}

/** Sorted populated buckets as spans (offset from the previous span's end) and count deltas. */
export function spansOf(buckets: ReadonlyMap<number, number>): { spans: BucketSpan[]; deltas: number[] } {
  const keys = [...buckets.keys()].sort((a, b) => a - b);
  const spans: BucketSpan[] = [];
  const deltas: number[] = [];
  let prevKey = 0;
  let prevCount = 0;
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]!;
    const c = buckets.get(k)!;
    if (i === 0) spans.push({ offset: k, length: 1 });
    else if (k === prevKey + 1) spans[spans.length - 1]!.length++;
    else spans.push({ offset: k - prevKey - 1, length: 1 });
    deltas.push(c - prevCount);
    prevKey = k;
    prevCount = c;
  }
  return { spans, deltas };
}

/** The absolute bucket counts back from spans and deltas (the demo's reader, and tests). */
export function bucketsOf(spans: readonly BucketSpan[], deltas: readonly number[]): Map<number, number> {
  const out = new Map<number, number>();
  let key = 0;
  let count = 0;
  let d = 0;
  for (let s = 0; s < spans.length; s++) {
    key += spans[s]!.offset;
    for (let j = 0; j < spans[s]!.length; j++) {
      count += deltas[d++]!;
      out.set(key, count);
      key++;
    }
  }
  return out;
}
