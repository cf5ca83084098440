/**
 * Records request records into prom-client metrics built from the catalog. Runs on the
 * metrics side (worker thread), never on the proxy's event loop.
 */
import { Gauge, type Registry } from 'prom-client';
import { API_LABEL, REQUEST_METRICS, TENANT_LABEL, UPSTREAM_LABEL } from './catalog.js';
import { gauge, type BucketSet, type MetricDef } from '../lib/metric-def.js';
import { SeriesHistogram, type HistogramSeries } from './histogram.js';
import { SeriesCounter } from './counter.js';
import { tpotSeconds, type RequestRecord } from '../record/record.js';
import { apiLabelOf } from '../record/routes.js';
import type { JudgedBatch } from './batch.js';
import type { Verdict } from '../slo/judge.js';
import type { BatchConsumer } from './consumer.js';
import type { LiveSettings } from './live.js';
import { SLO_NAMES, sloSeries, thresholdsFor, type SloConfig } from '../slo/config.js';
import { BreakdownHistograms, exportedLabels, type BreakdownSettings } from './breakdown-metrics.js';
import { DEFAULT_IN_FLIGHT_BANDS, DEFAULT_PROMPT_CLASSES, TenantLabels, type TenantSettings } from './breakdown.js';
import { DEFAULT_NATIVE, schemaForFactor, type NativeOptions, type NativeSeries } from './native.js';
import { attachNativeHistograms, NativeHistograms } from './native-store.js';
import type { TraceSettings } from '../lib/trace-env.js';

type Def = (typeof REQUEST_METRICS)[number];
type ByName<N extends Def['name']> = Extract<Def, { name: N }>;

function def<N extends Def['name']>(name: N): ByName<N> {
  return REQUEST_METRICS.find((d) => d.name === name) as ByName<N>;
}

export function histogram(registry: Registry, d: MetricDef, buckets: Record<BucketSet, number[]>, withTenant = false, withUpstream = false): SeriesHistogram {
  return new SeriesHistogram(d.name, d.help, exportedLabels(d, withTenant, withUpstream), buckets[d.buckets!], registry);
}
export function counter(registry: Registry, d: MetricDef, withTenant = false, withUpstream = false): SeriesCounter {
  return new SeriesCounter(d.name, d.help, exportedLabels(d, withTenant, withUpstream), registry);
}

/** What the request labels need of each upstream: its label value and engine kind (gen_ai_provider_name). */
export interface UpstreamLabel {
  name: string;
  engine: string;
}

/** The `upstream` value of a record that no upstream served (the merged /v1/models, a refused body). */
export const NO_UPSTREAM = 'none';

const GENERATION_OPERATIONS = new Set(['chat', 'text_completion']);

export interface ExemplarPolicy {
  /** Unsampled requests that missed an SLO are exported too (--trace-keep-failures). */
  keepBreaches: boolean;
}

/** The exemplar policy of a resolved config: on exactly when tracing is. */
/** What exemplars read of the configuration. */
export interface ExemplarOptions {
  tracing: TraceSettings | null;
  traceKeepFailures: boolean;
}

export function exemplarPolicyFrom(config: ExemplarOptions): ExemplarPolicy | null {
  return config.tracing ? { keepBreaches: config.traceKeepFailures } : null;
}

/** The latency histograms that are native too (token counts stay classic only). */
type NativeKey = 'ttft' | 'ttfo' | 'tpot' | 'e2e' | 'chunk';

/** client_golang's default factor: schema 3, buckets at most 9% wide. */
export const DEFAULT_BUCKET_FACTOR = 1.1;

export function nativeOptions(bucketFactor = DEFAULT_BUCKET_FACTOR, overrides: Partial<NativeOptions> = {}): NativeOptions {
  return { ...DEFAULT_NATIVE, schema: schemaForFactor(bucketFactor), ...overrides };
}

/** The native-histogram flags of a resolved config, as RequestMetrics takes them. */
/** What native histograms read of the configuration. */
export interface NativeHistogramOptions {
  nativeHistogramBucketFactor: number;
  nativeHistogramMaxBuckets: number;
  nativeHistogramMinResetDuration: number;
}

export function nativeOptionsFrom(config: NativeHistogramOptions): NativeOptions {
  return nativeOptions(config.nativeHistogramBucketFactor, { maxBuckets: config.nativeHistogramMaxBuckets, minResetSeconds: config.nativeHistogramMinResetDuration });
}

/**
 * The breakdown and tenant settings (issue 17), the upstreams (issue 26) and whether the native
 * latency histograms keep their classic buckets: the metrics side's config object, read as it is.
 */
export type RequestMetricsSettings = BreakdownSettings & TenantSettings & { classicHistograms?: boolean };
/** More than one upstream puts the `upstream` label on the request metrics. */
export type WithUpstreams = { upstreams?: readonly UpstreamLabel[] };

/**
 * --classic-histograms=false: the five latency histograms that are native too keep only their
 * +Inf bucket, _sum and _count in the classic form (as client_golang with no classic buckets);
 * their distribution travels in the native buckets alone. Token counts and the breakdowns are
 * classic only, so they keep theirs.
 */
function latencyBuckets(buckets: Record<BucketSet, number[]>, classic: boolean): Record<BucketSet, number[]> {
  return classic ? buckets : { ...buckets, ttft: [], tpot: [], e2e: [], chunk: [] };
}

const DEFAULT_SETTINGS: RequestMetricsSettings = {
  promptTokensClasses: [...DEFAULT_PROMPT_CLASSES], inFlightBands: [...DEFAULT_IN_FLIGHT_BANDS], tenantHistograms: false, tenantFrom: 'none', tenantLimit: 20,
};

/** Everything one (route, model[, tenant][, upstream]) records into, resolved once: labels, classic and native series. */
interface Bound {
  /** The histograms' labels (tenant among them only with --tenant-histograms). */
  labels: Record<string, string>;
  /** The five latency histograms' labels: `labels` and the API (routes.ts API_LABELS) of a generation route. */
  latencyLabels: Record<string, string>;
  /** The counters' labels: the request labels, and the tenant when tenants are on. */
  counterLabels: Record<string, string>;
  /** Made on first observation, so that a series appears in /metrics only once it has data. */
  latency: Partial<Record<NativeKey, HistogramSeries>>;
  native: Record<NativeKey, NativeSeries>;
}

export class RequestMetrics implements BatchConsumer {
  readonly name = 'requests';
  private readonly ttft: SeriesHistogram;
  private readonly ttfo: SeriesHistogram;
  private readonly tpot: SeriesHistogram;
  private readonly e2e: SeriesHistogram;
  private readonly chunk: SeriesHistogram;
  private readonly tokenUsage: SeriesHistogram;
  private readonly requests: SeriesCounter;
  private readonly tokens: SeriesCounter;
  private readonly tokenSource: SeriesCounter;
  private readonly meteringFailures: SeriesCounter;
  private readonly inFlight: Gauge;
  private readonly slo: SeriesCounter;
  private readonly goodput: SeriesCounter;
  private readonly judged: SeriesCounter;
  private readonly natives: NativeHistograms;
  private readonly breakdown: BreakdownHistograms;
  readonly tenants: TenantLabels;
  /** Tenants on: the counters carry the label; and on histograms too (tenantHistograms). */
  private readonly tenantCounters: boolean;
  private readonly tenantHistograms: boolean;
  /** route → model label (and tenant, upstream) → Bound: no label object per request once seen. A route has one operation (routes.ts). */
  private readonly bound = new Map<string, Map<string, Bound>>();
  /** Several upstreams: their labels by record index; null with one (no upstream label at all). */
  private readonly upstreams: readonly UpstreamLabel[] | null;

  constructor(
    registry: Registry,
    buckets: Record<BucketSet, number[]>,
    private readonly provider: string,
    private slos: SloConfig,
    native: NativeOptions = nativeOptions(),
    /** null: no exemplars (tracing off: there would be no trace to link to). */
    private readonly exemplars: ExemplarPolicy | null = null,
    settings: RequestMetricsSettings & WithUpstreams = DEFAULT_SETTINGS,
  ) {
    this.natives = new NativeHistograms(native);
    attachNativeHistograms(registry, this.natives);
    this.tenants = new TenantLabels(settings);
    // Label names are fixed per metric for the life of the registry: decided here, once.
    const tc = (this.tenantCounters = settings.tenantFrom !== 'none');
    const th = (this.tenantHistograms = tc && settings.tenantHistograms);
    const up = (settings.upstreams?.length ?? 0) > 1;
    this.upstreams = up ? settings.upstreams! : null;
    const lat = latencyBuckets(buckets, settings.classicHistograms ?? true);
    this.ttft = histogram(registry, def('gen_ai_server_time_to_first_token_seconds'), lat, th, up);
    this.ttfo = histogram(registry, def('infermeter_time_to_first_output_seconds'), lat, th, up);
    this.tpot = histogram(registry, def('gen_ai_server_time_per_output_token_seconds'), lat, th, up);
    this.e2e = histogram(registry, def('gen_ai_server_request_duration_seconds'), lat, th, up);
    this.chunk = histogram(registry, def('infermeter_inter_chunk_latency_seconds'), lat, th, up);
    this.tokenUsage = histogram(registry, def('gen_ai_client_token_usage'), buckets, th, up);
    this.breakdown = new BreakdownHistograms(registry, buckets, settings, th, up);
    this.requests = counter(registry, def('infermeter_requests_total'), tc, up);
    this.tokens = counter(registry, def('infermeter_tokens_total'), tc, up);
    this.tokenSource = counter(registry, def('infermeter_output_token_source_total'));
    this.meteringFailures = counter(registry, def('infermeter_metering_failures_total'));
    this.inFlight = gauge(registry, def('infermeter_requests_in_flight'));
    this.slo = counter(registry, def('infermeter_slo_requests_total'), tc);
    this.goodput = counter(registry, def('infermeter_goodput_requests_total'), tc);
    this.judged = counter(registry, def('infermeter_slo_judged_requests_total'), tc);
    this.thresholdGauge = gauge(registry, def('infermeter_slo_threshold_seconds'));
    this.publishThresholds();
  }

  private readonly thresholdGauge: Gauge;

  private publishThresholds(): void {
    const slos = this.slos;
    const thresholdGauge = this.thresholdGauge;
    thresholdGauge.reset();
    for (const model of ['default', ...Object.keys(slos.models)]) {
      const t = thresholdsFor(slos, model === 'default' ? '' : model);
      for (const name of SLO_NAMES) if (t[name] !== undefined) thresholdGauge.set({ gen_ai_request_model: model, slo: name }, t[name]);
    }
    for (const c of slos.promptClasses) {
      for (const s of sloSeries(slos)) if (s.promptTokensLe === c.promptTokensLe) thresholdGauge.set({ gen_ai_request_model: 'default', slo: s.label }, c.thresholds[s.slo]!);
    }
  }

  /** The SLO series' labels: model, and the tenant when tenants are on. */
  private sloLabels(model: string, tenant: string): Record<string, string> {
    return this.tenantCounters ? { gen_ai_request_model: model, tenant } : { gen_ai_request_model: model };
  }

  /**
   * A reload: the next records are judged by these thresholds (the exact good/bad counters);
   * the histogram buckets keep their boundaries (config-reload.ts says why). Series of an
   * SLO that no longer applies stay as they are; a new one is seeded at 0 on its first verdict.
   */
  setSlos(slos: SloConfig): void {
    this.slos = slos;
    this.seeded.clear();
    this.publishThresholds();
  }

  private readonly seeded = new Set<string>();

  /**
   * Creates a model's good/bad series at 0 the first time it is judged: a counter series
   * born at its first increment hides that increment from rate(), so the first bad request
   * after a quiet period would never reach an alert.
   */
  private seedSloSeries(model: string, tenant: string): void {
    const key = model + '\u0000' + tenant;
    if (this.seeded.has(key)) return;
    this.seeded.add(key);
    const t = thresholdsFor(this.slos, model);
    const labels = this.sloLabels(model, tenant);
    for (const s of sloSeries(this.slos)) {
      if (s.promptTokensLe === null && t[s.slo] === undefined) continue;
      for (const result of ['good', 'bad']) this.slo.inc({ ...labels, slo: s.label, result }, 0);
    }
    this.goodput.inc(labels, 0);
    this.judged.inc(labels, 0);
  }

  /**
   * The trace id an observation of `r` carries as exemplar: only of a span that is exported
   * (sampled, or kept for missing an SLO), so that every exemplar links to a trace that exists.
   */
  private exemplarOf(r: RequestRecord, verdicts: readonly { good: boolean }[] | null): string | null {
    const ex = this.exemplars;
    if (ex === null || r.traceId === null) return null;
    if ((r.traceFlags & 1) === 1) return r.traceId;
    return ex.keepBreaches && verdicts?.some((v) => !v.good) ? r.traceId : null;
  }

  ingest(batch: JudgedBatch): void {
    this.inFlight.set(batch.inFlight);
    batch.records.forEach((r, i) => this.record(r, batch.labels[i]!, batch.verdicts[i]!));
  }

  /** A reload: new SLO thresholds and tenant limit (the rest of the live settings are not this consumer's). */
  applyLive(live: LiveSettings): void {
    this.setSlos(live.slos);
    this.tenants.setLimit(live.tenantLimit);
  }

  private bind(route: string, operation: string, model: string, tenant: string, upstream: number): Bound {
    let byModel = this.bound.get(route);
    if (!byModel) this.bound.set(route, (byModel = new Map()));
    const ups = this.upstreams;
    let key = this.tenantCounters ? model + '\u0000' + tenant : model;
    if (ups) key += '\u0001' + upstream;
    let b = byModel.get(key);
    if (!b) {
      const u = ups ? ups[upstream] : undefined;
      const request: Record<string, string> = ups
        ? { gen_ai_operation_name: operation, gen_ai_provider_name: u?.engine ?? this.provider, gen_ai_request_model: model, [UPSTREAM_LABEL]: u?.name ?? NO_UPSTREAM }
        : { gen_ai_operation_name: operation, gen_ai_provider_name: this.provider, gen_ai_request_model: model };
      const counterLabels = this.tenantCounters ? { ...request, [TENANT_LABEL]: tenant } : request;
      const labels = this.tenantHistograms ? counterLabels : request;
      const api = apiLabelOf(route);
      const latencyLabels = api === null ? labels : { ...labels, [API_LABEL]: api };
      const series = (name: Def['name']) => this.natives.series(name, latencyLabels);
      b = {
        labels,
        latencyLabels,
        counterLabels,
        latency: {},
        native: {
          ttft: series('gen_ai_server_time_to_first_token_seconds'),
          ttfo: series('infermeter_time_to_first_output_seconds'),
          tpot: series('gen_ai_server_time_per_output_token_seconds'),
          e2e: series('gen_ai_server_request_duration_seconds'),
          chunk: series('infermeter_inter_chunk_latency_seconds'),
        },
      };
      byModel.set(key, b);
    }
    return b;
  }

  private observe(b: Bound, key: NativeKey, value: number, exemplar: string | null, at: number): void {
    const classic = (b.latency[key] ??= this[key].labels(b.latencyLabels));
    if (exemplar === null) classic.observe(value);
    else classic.observeTraced(value, exemplar, at);
    b.native[key].observe(value, exemplar, at);
  }

  /** One finished request (its inFlightAtFirstToken machine-wide: side/sources.ts), its model label and verdicts (batch.ts). */
  private record(r: RequestRecord, model: string, verdicts: readonly Verdict[] | null): void {
    const tenant = this.tenantCounters ? this.tenants.label(r.tenant) : '';
    const bound = this.bind(r.route, r.operation, model, tenant, r.upstream);
    const labels = bound.counterLabels;
    this.requests.inc({ ...labels, route: r.route, outcome: r.outcome });
    if (r.meteringFailure) this.meteringFailures.inc({ reason: r.meteringFailure });
    if (!GENERATION_OPERATIONS.has(r.operation)) return;

    if (r.chunkGaps) {
      // Both series resolved once per record, not per gap: a stream brings dozens.
      const classic = (bound.latency.chunk ??= this.chunk.labels(bound.latencyLabels));
      const native = bound.native.chunk;
      for (const gap of r.chunkGaps) {
        classic.observe(gap);
        native.observe(gap);
      }
    }
    if (r.inputTokens > 0) this.tokens.inc({ ...labels, gen_ai_token_type: 'input' }, r.inputTokens);
    if (r.outputTokens > 0) this.tokens.inc({ ...labels, gen_ai_token_type: 'output' }, r.outputTokens);
    if (r.cachedInputTokens > 0) this.tokens.inc({ ...labels, gen_ai_token_type: 'cached_input' }, r.cachedInputTokens);
    if (r.reasoningTokens > 0) this.tokens.inc({ ...labels, gen_ai_token_type: 'reasoning' }, r.reasoningTokens);
    if (r.outcome !== 'rejected' && r.outcome !== 'worker_lost') this.tokenSource.inc({ source: r.tokenSource });

    const timed = r.outcome === 'ok' && !r.meteringFailure;
    this.breakdown.record(r, bound.labels, r.inFlightAtFirstToken, timed);
    if (timed) {
      const exemplar = this.exemplarOf(r, verdicts);
      const at = exemplar === null ? 0 : (r.startedAt + r.e2e * 1000) / 1000;
      const hl = bound.labels;
      if (r.inputTokens > 0) this.tokenUsage.observe({ ...hl, gen_ai_token_type: 'input' }, r.inputTokens);
      if (r.outputTokens > 0) this.tokenUsage.observe({ ...hl, gen_ai_token_type: 'output' }, r.outputTokens);
      // One measurement, two histograms: the classic buckets and the native ones.
      if (r.e2e >= 0) this.observe(bound, 'e2e', r.e2e, exemplar, at);
      if (r.ttft >= 0) this.observe(bound, 'ttft', r.ttft, exemplar, at);
      if (r.ttfo >= 0) this.observe(bound, 'ttfo', r.ttfo, exemplar, at);
      const tpot = tpotSeconds(r);
      if (tpot >= 0) this.observe(bound, 'tpot', tpot, exemplar, at);
    }

    if (!verdicts) return;
    this.seedSloSeries(model, tenant);
    const sl = this.sloLabels(model, tenant);
    let allGood = true;
    for (const v of verdicts) {
      this.slo.inc({ ...sl, slo: v.slo, result: v.good ? 'good' : 'bad' });
      allGood &&= v.good;
    }
    this.judged.inc(sl);
    if (allGood) this.goodput.inc(sl);
  }
}
