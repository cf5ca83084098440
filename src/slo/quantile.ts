/**
 * Latency quantiles that work on whichever histogram Prometheus holds: the native one where it
 * scraped it (protobuf with native histograms on), else the classic `_bucket` series. Where both
 * exist (2.45+ scrape_classic_histograms, 3.x always_scrape_classic_histograms) `or` keeps the
 * native answer: same label set, left side wins.
 */

/** `by` lists the grouping labels without `le`; `sel` is a selector body (may be empty). */
export function latencyQuantile(q: number, metric: string, by: string, sel: string, window: string): string {
  const s = sel ? `{${sel}}` : '';
  return `histogram_quantile(${q}, sum by (${by}) (rate(${metric}${s}[${window}])))\nor\n${classicQuantile(q, metric, by, sel, window)}`;
}

/** Classic buckets only (engine histograms, which infermeter relays as scraped). */
export function classicQuantile(q: number, metric: string, by: string, sel: string, window: string): string {
  const s = sel ? `{${sel}}` : '';
  return `histogram_quantile(${q}, sum by (le, ${by}) (rate(${metric}_bucket${s}[${window}])))`;
}

/**
 * Mean latency over the window, native or classic as latencyQuantile: means of the parts of a
 * duration add up exactly, where quantiles of the parts do not (hence the residual is taken
 * between means).
 */
export function latencyMean(metric: string, by: string, sel: string, window: string): string {
  const s = sel ? `{${sel}}` : '';
  const native = `histogram_sum(sum by (${by}) (rate(${metric}${s}[${window}])))\n/\nhistogram_count(sum by (${by}) (rate(${metric}${s}[${window}])))`;
  return `(\n${native}\n)\nor\n(\n${classicMean(metric, by, sel, window)}\n)`;
}

export function classicMean(metric: string, by: string, sel: string, window: string): string {
  const s = sel ? `{${sel}}` : '';
  return `sum by (${by}) (rate(${metric}_sum${s}[${window}]))\n/\nsum by (${by}) (rate(${metric}_count${s}[${window}]))`;
}
