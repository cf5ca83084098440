/**
 * The request histograms' storage on the metrics side: a prom-client metric (the registry
 * renders it like its own Histogram, byte for byte) whose series are looked up once per
 * request record instead of once per observation. A record brings one TTFT but dozens of
 * inter-chunk gaps; prom-client's observe() validates and hashes the labels and scans the
 * bucket list linearly on every call, which made the metrics thread cost more per chunk
 * than the proxy's own framing (docs/performance.md).
 */
import type { Registry } from 'prom-client';

/** A recent traced observation of a bucket, as prom-client shapes exemplars (timestamp: epoch seconds). */
export interface Exemplar {
  labelSet: { trace_id: string };
  value: number;
  timestamp: number;
}

/** One label set's buckets: non-cumulative counts per upper bound, plus +Inf via count. */
export class HistogramSeries {
  readonly counts: Float64Array;
  sum = 0;
  count = 0;
  /** Per bucket, +Inf last: the latest traced observation (made on the first one; one object per bucket at most). */
  exemplars: (Exemplar | null)[] | null = null;

  constructor(
    readonly labels: Record<string, string>,
    private readonly bounds: Float64Array,
  ) {
    this.counts = new Float64Array(bounds.length);
  }

  /** Counts `value`; answers its bucket's index (the bound count for +Inf, -1 when not counted). */
  observe(value: number): number {
    if (!Number.isFinite(value)) return -1;
    const b = this.bounds;
    // First bound >= value (Prometheus buckets are `le`); past the last one is +Inf only.
    let lo = 0;
    let hi = b.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (b[mid]! < value) lo = mid + 1;
      else hi = mid;
    }
    // +Inf has no slot (it is `count`). Without this test the write would fall past the end of
    // the Float64Array, which a typed array ignores: mutation testing cannot tell `true` or `<=`
    // from it; the test says what is meant.
    if (lo < b.length) this.counts[lo]!++;
    this.sum += value;
    this.count++;
    return lo;
  }

  /** observe() that also makes this the bucket's exemplar (only sampled traces reach here). */
  observeTraced(value: number, traceId: string, timestampSeconds: number): void {
    const i = this.observe(value);
    if (i < 0) return;
    const ex = (this.exemplars ??= new Array<Exemplar | null>(this.bounds.length + 1).fill(null));
    const e = ex[i];
    if (e) {
      e.labelSet.trace_id = traceId;
      e.value = value;
      e.timestamp = timestampSeconds;
    } else ex[i] = { labelSet: { trace_id: traceId }, value, timestamp: timestampSeconds };
  }
}

interface Value {
  labels: Record<string, string | number>;
  /** Only in what getForPromString() gives the text renderer. */
  sharedLabels?: Record<string, string>;
  value: number;
  metricName: string;
  /** Shaped as prom-client's: null (or the bucket's exemplar) on bucket lines, undefined on _sum and _count. */
  exemplar: Exemplar | null | undefined;
}

export class SeriesHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly bounds: Float64Array;
  private readonly series = new Map<string, HistogramSeries>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelNames: readonly string[],
    buckets: readonly number[],
    registry: Registry,
  ) {
    this.bounds = Float64Array.from([...new Set(buckets)].sort((a, b) => a - b));
    registry.registerMetric(this as unknown as Parameters<Registry['registerMetric']>[0]);
  }

  /** The series of these labels (every label name given); made on first use. */
  labels(labels: Record<string, string>): HistogramSeries {
    // Only the separator matters to the key (a test pins it); its start is internal, so a
    // mutant of this '' survives.
    let key = '';
    for (const n of this.labelNames) key += labels[n] + '\u0000';
    let s = this.series.get(key);
    if (!s) {
      const own: Record<string, string> = {};
      for (const n of this.labelNames) own[n] = labels[n]!;
      s = new HistogramSeries(own, this.bounds);
      this.series.set(key, s);
    }
    return s;
  }

  observe(labels: Record<string, string>, value: number): void {
    this.labels(labels).observe(value);
  }

  /** prom-client's metric interface, as its Histogram has it: every label on each value, exemplars on buckets. */
  async get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: Value[] }> {
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values: this.values(false) };
  }

  /** What the registry renders to text: a series' labels shared by its lines (formatted once). */
  async getForPromString(): Promise<{ name: string; help: string; type: string; aggregator: string; values: Value[] }> {
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values: this.values(true) };
  }

  /**
   * Every series' bucket, sum and count lines. `shared`: the series' labels go in
   * `sharedLabels` (the text renderer formats them once); else they are merged into each
   * line's labels. prom-client's 0.0.4 text never prints exemplars; the OpenMetrics renderer does.
   */
  private values(shared: boolean): Value[] {
    const values: Value[] = [];
    const bucket = `${this.name}_bucket`;
    for (const s of this.series.values()) {
      const at = shared
        ? (own: Record<string, string | number>) => ({ labels: own, sharedLabels: s.labels })
        : (own: Record<string, string | number>) => ({ labels: { ...own, ...s.labels } });
      let acc = 0;
      const ex = s.exemplars;
      for (let i = 0; i < this.bounds.length; i++) {
        acc += s.counts[i]!;
        values.push({ ...at({ le: this.bounds[i]! }), value: acc, metricName: bucket, exemplar: ex?.[i] ?? null });
      }
      values.push({ ...at({ le: '+Inf' }), value: s.count, metricName: bucket, exemplar: ex?.[this.bounds.length] ?? null });
      values.push({ ...at({}), value: s.sum, metricName: `${this.name}_sum`, exemplar: undefined });
      values.push({ ...at({}), value: s.count, metricName: `${this.name}_count`, exemplar: undefined });
    }
    return values;
  }

  reset(): void {
    this.series.clear();
  }
}
