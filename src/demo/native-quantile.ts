/**
 * Quantiles for the demo's live line from the native histograms: the difference of two
 * protobuf scrapes, bucket by bucket, interpolated within a native bucket the way Prometheus'
 * histogram_quantile does (linearly, zero bucket first). A native bucket is at most 9% wide
 * (schema 3), where the classic ones the line used before were up to 2x. Pure.
 */
import { bucketsOf, bucketUpperBound, type BucketSpan } from '../metrics/native.js';
import type { DecodedFamily } from '../exporters/prometheus/proto.js';

/** One native histogram's positive side: schema, zero count and absolute bucket counts. */
export interface NativeCounts {
  schema: number;
  zeroThreshold: number;
  zeroCount: number;
  buckets: Map<number, number>;
}

/** Every native series of `name`, summed into one, at the lowest schema among them. */
export function nativeCounts(families: readonly DecodedFamily[], name: string): NativeCounts | null {
  const series = families.find((f) => f.name === name)?.metric.map((m) => m.histogram).filter((h) => h?.schema !== undefined) ?? [];
  if (series.length === 0) return null;
  const schema = Math.min(...series.map((h) => h!.schema!));
  const out: NativeCounts = { schema, zeroThreshold: 0, zeroCount: 0, buckets: new Map() };
  for (const h of series) {
    out.zeroCount += h!.zero_count ?? 0;
    out.zeroThreshold = Math.max(out.zeroThreshold, h!.zero_threshold ?? 0);
    const shift = h!.schema! - schema;
    for (const [i, c] of bucketsOf((h!.positive_span ?? []) as BucketSpan[], h!.positive_delta ?? [])) add(out.buckets, lower(i, shift), c);
  }
  return out;
}

/** Bucket i at schema s lies inside bucket ⌈i / 2^shift⌉ at schema s − shift. */
function lower(i: number, shift: number): number {
  return shift === 0 ? i : Math.ceil(i / 2 ** shift);
}

function add(m: Map<number, number>, k: number, c: number): void {
  m.set(k, (m.get(k) ?? 0) + c);
}

function atSchema(c: NativeCounts, schema: number): NativeCounts {
  if (c.schema === schema) return c;
  const buckets = new Map<number, number>();
  for (const [i, n] of c.buckets) add(buckets, lower(i, c.schema - schema), n);
  return { ...c, schema, buckets };
}

/** The q-quantile of what was observed between `before` and `now` (null: nothing was). */
export function nativeQuantileOfDelta(q: number, now: NativeCounts | null, before: NativeCounts | null): number | null {
  if (!now) return null;
  // The series may have lowered its schema (bucket limit) between the scrapes: compare at now's.
  const then = before && before.schema >= now.schema ? atSchema(before, now.schema) : null;
  const keys = [...now.buckets.keys()].sort((a, b) => a - b);
  const deltas = keys.map((k) => (now.buckets.get(k) ?? 0) - (then?.buckets.get(k) ?? 0));
  const zero = now.zeroCount - (then?.zeroCount ?? 0);
  const total = zero + deltas.reduce((a, b) => a + b, 0);
  if (total <= 0) return null;
  const rank = q * total;
  if (rank <= zero) return now.zeroThreshold * (zero > 0 ? rank / zero : 0);
  let below = zero;
  for (let i = 0; i < keys.length; i++) {
    const c = deltas[i]!;
    if (c > 0 && below + c >= rank) {
      const upper = bucketUpperBound(keys[i]!, now.schema);
      const lower = bucketUpperBound(keys[i]! - 1, now.schema);
      return lower + ((upper - lower) * (rank - below)) / c;
    }
    below += c;
  }
  return null;
}
