/**
 * Exact distribution summaries over raw samples. Percentiles use linear interpolation
 * between closest ranks (numpy's default `np.percentile(..., method="linear")`, which is what
 * `vllm bench serve` reports), so the same samples give the same P50/P95/P99 here and there.
 */

export interface Distribution {
  count: number;
  /** null when there are no samples (JSON has no NaN). */
  min: number | null;
  max: number | null;
  mean: number | null;
  p50: number | null;
  p95: number | null;
  p99: number | null;
}

/** The SLOs a client can judge (TTFO needs visible-content timing the client does not keep). */
export const BENCH_SLOS = ['ttft', 'tpot', 'e2e'] as const;
export type BenchSlo = (typeof BENCH_SLOS)[number];

/** One SLO judged over a phase's requests. */
export interface SloResult {
  threshold: number;
  good: number;
  judged: number;
  /** good / judged; null when nothing was judged. */
  attainment: number | null;
}

export const PERCENTILE_METHOD = 'linear interpolation between closest ranks (numpy default, as vllm bench serve)';

/** q in [0, 100] of ascending-sorted values; numpy: rank = q/100 · (n − 1), interpolated. */
export function percentile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  const rank = (q / 100) * (sorted.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.ceil(rank);
  const a = sorted[lo]!;
  return a + (sorted[hi]! - a) * (rank - lo);
}

export function distribution(values: readonly number[]): Distribution {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return { count: 0, min: null, max: null, mean: null, p50: null, p95: null, p99: null };
  return {
    count: v.length,
    min: v[0]!,
    max: v[v.length - 1]!,
    mean: v.reduce((s, x) => s + x, 0) / v.length,
    p50: percentile(v, 50),
    p95: percentile(v, 95),
    p99: percentile(v, 99),
  };
}

/** Mean and max of a gauge sampled over a step; null when never sampled. */
export interface GaugeSummary {
  samples: number;
  mean: number | null;
  max: number | null;
}

export function gaugeSummary(values: readonly number[]): GaugeSummary {
  const v = values.filter((x) => Number.isFinite(x));
  if (v.length === 0) return { samples: 0, mean: null, max: null };
  return { samples: v.length, mean: v.reduce((s, x) => s + x, 0) / v.length, max: Math.max(...v) };
}
