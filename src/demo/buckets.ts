/**
 * Quantiles from the difference of two cumulative histogram scrapes, interpolated within
 * the bucket the way Prometheus' histogram_quantile does. Pure; used by the demo's live line.
 */
import type { Sample } from '../lib/prom-text.js';

/** le → cumulative count, summed over every series of `name`. */
export function cumulativeBuckets(samples: readonly Sample[], name: string): Map<number, number> {
  const out = new Map<number, number>();
  for (const s of samples) {
    if (s.name !== `${name}_bucket`) continue;
    const le = s.labels['le'] === '+Inf' ? Infinity : Number(s.labels['le']);
    out.set(le, (out.get(le) ?? 0) + s.value);
  }
  return out;
}

export function quantileOfDelta(q: number, now: Map<number, number>, before: Map<number, number>): number | null {
  const bounds = [...now.keys()].sort((a, b) => a - b);
  const counts = bounds.map((le) => (now.get(le) ?? 0) - (before.get(le) ?? 0));
  const total = counts[counts.length - 1] ?? 0;
  if (total <= 0) return null;
  const rank = q * total;
  for (let i = 0; i < bounds.length; i++) {
    if (counts[i]! >= rank) {
      const upper = bounds[i]!;
      const lower = i === 0 ? 0 : bounds[i - 1]!;
      if (upper === Infinity) return lower;
      const below = i === 0 ? 0 : counts[i - 1]!;
      const inBucket = counts[i]! - below;
      return inBucket <= 0 ? upper : lower + ((upper - lower) * (rank - below)) / inBucket;
    }
  }
  return null;
}
