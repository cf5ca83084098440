/**
 * The breakdown histograms (catalog BREAKDOWN_METRICS): TTFT and TTFO by prompt class, TPOT and
 * inter-chunk latency by concurrency band. Recorded from the same request record, at the same
 * moment, as the semconv histograms (prometheus.ts); classic buckets only.
 */
import type { Registry } from 'prom-client';
import { BREAKDOWN_METRICS, TENANT_LABEL, UPSTREAM_LABEL } from './catalog.js';
import { type BucketSet, type MetricDef } from '../lib/metric-def.js';
import { SeriesHistogram, type HistogramSeries } from './histogram.js';
import { Bands, UNKNOWN_CLASS } from './breakdown.js';
import { tpotSeconds, type RequestRecord } from '../record/record.js';

type Name = (typeof BREAKDOWN_METRICS)[number]['name'];

export interface BreakdownSettings {
  promptTokensClasses: number[];
  inFlightBands: number[];
  /** The tenant label goes on these histograms only when this is true and tenants are on. */
  tenantHistograms: boolean;
}

/** A def's labels as this process exports them: `tenant` only where the settings put it. */
export function exportedLabels(d: MetricDef, withTenant: boolean, withUpstream = false): string[] {
  return d.labels.filter((l) => (l !== TENANT_LABEL || withTenant) && (l !== UPSTREAM_LABEL || withUpstream));
}

/** One label set's breakdown series, by class or band index, made on first use. */
interface Bound {
  ttft: HistogramSeries[];
  ttfo: HistogramSeries[];
  tpot: HistogramSeries[];
  chunk: HistogramSeries[];
}

export class BreakdownHistograms {
  /** By the caller's label object (one per operation, model and tenant, kept by prometheus.ts): no key string per record. */
  private readonly bound = new WeakMap<Record<string, string>, Bound>();
  readonly classes: Bands;
  readonly bands: Bands;
  private readonly ttft: SeriesHistogram;
  private readonly ttfo: SeriesHistogram;
  private readonly tpot: SeriesHistogram;
  private readonly chunk: SeriesHistogram;

  constructor(registry: Registry, buckets: Record<BucketSet, number[]>, settings: BreakdownSettings, withTenant: boolean, withUpstream = false) {
    this.classes = new Bands(settings.promptTokensClasses);
    this.bands = new Bands(settings.inFlightBands);
    const make = (name: Name) => {
      const d = BREAKDOWN_METRICS.find((m) => m.name === name)!;
      return new SeriesHistogram(d.name, d.help, exportedLabels(d, withTenant, withUpstream), buckets[d.buckets], registry);
    };
    this.ttft = make('infermeter_time_to_first_token_by_prompt_seconds');
    this.ttfo = make('infermeter_time_to_first_output_by_prompt_seconds');
    this.tpot = make('infermeter_time_per_output_token_by_concurrency_seconds');
    this.chunk = make('infermeter_inter_chunk_latency_by_concurrency_seconds');
  }

  /**
   * One finished generation record. `labels`: the request labels (tenant included when it
   * belongs on histograms). `inFlight`: the machine's generation requests in flight at its first
   * token (-1: no token), as the metrics side computed it.
   */
  record(r: RequestRecord, labels: Record<string, string>, inFlight: number, ok: boolean): void {
    let b = this.bound.get(labels);
    if (!b) this.bound.set(labels, (b = { ttft: [], ttfo: [], tpot: [], chunk: [] }));
    const band = inFlight >= 0 ? this.bands.index(inFlight) : -1;
    if (r.chunkGaps && band >= 0) {
      const s = (b.chunk[band] ??= this.chunk.labels({ ...labels, in_flight_le: this.bands.values[band]! }));
      for (const gap of r.chunkGaps) s.observe(gap);
    }
    if (!ok) return;
    if (r.ttft >= 0 || r.ttfo >= 0) {
      // Index classes.values.length is `unknown`.
      const c = r.inputTokensKnown ? this.classes.index(r.inputTokens) : this.classes.values.length;
      const byPrompt = () => ({ ...labels, prompt_tokens_le: this.classes.values[c] ?? UNKNOWN_CLASS });
      if (r.ttft >= 0) (b.ttft[c] ??= this.ttft.labels(byPrompt())).observe(r.ttft);
      if (r.ttfo >= 0) (b.ttfo[c] ??= this.ttfo.labels(byPrompt())).observe(r.ttfo);
    }
    const tpot = tpotSeconds(r);
    if (tpot >= 0 && band >= 0) (b.tpot[band] ??= this.tpot.labels({ ...labels, in_flight_le: this.bands.values[band]! })).observe(tpot);
  }
}
