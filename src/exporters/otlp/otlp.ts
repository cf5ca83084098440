/**
 * OTLP push of the request metrics, fed the same judged batches as the Prometheus side
 * (both are consumers in side/consumers.ts, in the metrics worker). This module is loaded
 * only when the standard OTEL_* variables ask for OTLP (start.ts decides); otherwise
 * no OpenTelemetry code is even loaded.
 *
 * What is exported: the request, token and SLO instruments below. Collector gauges (GPU,
 * engine, host) stay on /metrics: they are sampled on their own clocks into the
 * Prometheus registry, and an OpenTelemetry Collector can scrape them with its prometheus
 * receiver if they must travel over OTLP too.
 */
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import type { Attributes, Counter, Histogram } from '@opentelemetry/api';
import { AggregationType, MeterProvider, PeriodicExportingMetricReader, type PushMetricExporter, type ViewOptions } from '@opentelemetry/sdk-metrics';
import { defaultResource, detectResources, envDetector, resourceFromAttributes, type Resource } from '@opentelemetry/resources';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import type { Logger } from 'pino';
import type { EngineKind } from '../../lib/engines.js';
import type { HostPort } from '../../lib/parse.js';
import type { BucketSet } from '../../lib/metric-def.js';
import { createExporter } from './export.js';
import type { HistogramAggregation, OtlpSettings } from '../../lib/otel-env.js';
import { ATTR, OTLP_INSTRUMENTS, instrumentSpec, type InstrumentKey } from './instruments.js';
import { tpotSeconds, type RequestRecord } from '../../record/record.js';
import { apiLabelOf } from '../../record/routes.js';
import type { JudgedBatch } from '../../metrics/batch.js';
import type { Verdict } from '../../slo/judge.js';

const GENERATION_OPERATIONS = new Set(['chat', 'text_completion']);
/** A final export on shutdown must not hold the daemon up when the collector is gone. */
const SHUTDOWN_GRACE_MS = 2_000;

export const PACKAGE_VERSION = readVersion();

export interface OtlpOptions {
  buckets: Record<BucketSet, number[]>;
  provider: string;
  exporter: PushMetricExporter;
  intervalMs: number;
  timeoutMs: number;
  /** Explicit buckets (the Prometheus ones) unless the environment asks for exponential. */
  histogramAggregation?: HistogramAggregation;
  /** Overrides the defaults; OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES override both. */
  resource?: Record<string, string>;
}

/** What OTLP metrics read of the configuration. */
export interface OtlpConfigOptions {
  buckets: Record<BucketSet, number[]>;
  engine: EngineKind;
  listen: HostPort;
}

/** The recorder for this process, once start.ts has decided that OTLP is on. */
export function createOtlpRecorder(config: OtlpConfigOptions, log: Logger, settings: OtlpSettings): OtlpRecorder {
  return new OtlpRecorder({
    buckets: config.buckets,
    provider: config.engine,
    exporter: createExporter(settings, log),
    intervalMs: settings.intervalMs,
    timeoutMs: settings.timeoutMs,
    histogramAggregation: settings.histogramAggregation,
    // Distinct per daemon, so totals from many infermeters never merge into one series.
    resource: { 'service.instance.id': `${hostname()}:${config.listen.port}` },
  });
}

type Histograms = Record<'ttft' | 'ttfo' | 'tpot' | 'e2e' | 'chunk' | 'tokenUsage', Histogram>;
type Counters = Record<'requests' | 'tokens' | 'tokenSource' | 'meteringFailures' | 'slo' | 'goodput' | 'judged', Counter>;

export class OtlpRecorder {
  readonly provider: MeterProvider;
  private readonly h: Histograms;
  private readonly c: Counters;
  private inFlight = 0;

  constructor(private readonly opts: OtlpOptions) {
    const reader = new PeriodicExportingMetricReader({ exporter: opts.exporter, exportIntervalMillis: opts.intervalMs, exportTimeoutMillis: opts.timeoutMs });
    this.provider = new MeterProvider({ resource: buildResource(opts.resource ?? {}), views: bucketViews(opts.buckets, opts.histogramAggregation), readers: [reader] });
    const meter = this.provider.getMeter('infermeter', PACKAGE_VERSION);
    const histogram = (k: InstrumentKey) => {
      const s = instrumentSpec(k);
      return meter.createHistogram(s.name, { unit: s.unit, description: s.description });
    };
    const counter = (k: InstrumentKey) => {
      const s = instrumentSpec(k);
      return meter.createCounter(s.name, { unit: s.unit, description: s.description });
    };
    this.h = { ttft: histogram('ttft'), ttfo: histogram('ttfo'), tpot: histogram('tpot'), e2e: histogram('e2e'), chunk: histogram('chunk'), tokenUsage: histogram('tokenUsage') };
    this.c = {
      requests: counter('requests'), tokens: counter('tokens'), tokenSource: counter('tokenSource'), meteringFailures: counter('meteringFailures'),
      slo: counter('slo'), goodput: counter('goodput'), judged: counter('judged'),
    };
    const inFlight = instrumentSpec('inFlight');
    meter.createObservableGauge(inFlight.name, { unit: inFlight.unit, description: inFlight.description })
      .addCallback((result) => result.observe(this.inFlight));
  }

  /** Labels and verdicts come with the batch (judged once, metrics/batch.ts), as on the Prometheus side. */
  ingest(batch: JudgedBatch): void {
    this.inFlight = batch.inFlight;
    batch.records.forEach((r, i) => this.record(r, batch.labels[i]!, batch.verdicts[i]!));
  }

  /** The same decisions as the Prometheus side (prometheus.ts), in OTel spelling. */
  private record(r: RequestRecord, model: string, verdicts: readonly Verdict[] | null): void {
    const base: Attributes = { [ATTR.operation]: r.operation, [ATTR.provider]: this.opts.provider, [ATTR.model]: model };
    const failed = r.outcome !== 'ok';
    const errorType = failed ? (r.errorType ?? r.outcome) : undefined;
    this.c.requests.add(1, failed ? { ...base, route: r.route, outcome: r.outcome, [ATTR.errorType]: errorType } : { ...base, route: r.route, outcome: r.outcome });
    if (r.meteringFailure) this.c.meteringFailures.add(1, { reason: r.meteringFailure });
    if (!GENERATION_OPERATIONS.has(r.operation)) return;

    // The five latency histograms carry the API too (as on /metrics); token usage and the counters do not.
    const api = apiLabelOf(r.route);
    const latency: Attributes = api === null ? base : { ...base, [ATTR.api]: api };
    if (r.chunkGaps) for (const gap of r.chunkGaps) this.h.chunk.record(gap, latency);
    if (r.inputTokens > 0) this.c.tokens.add(r.inputTokens, { ...base, [ATTR.tokenType]: 'input' });
    if (r.outputTokens > 0) this.c.tokens.add(r.outputTokens, { ...base, [ATTR.tokenType]: 'output' });
    if (r.cachedInputTokens > 0) this.c.tokens.add(r.cachedInputTokens, { ...base, [ATTR.tokenType]: 'cached_input' });
    if (r.reasoningTokens > 0) this.c.tokens.add(r.reasoningTokens, { ...base, [ATTR.tokenType]: 'reasoning' });
    if (r.outcome !== 'rejected' && r.outcome !== 'worker_lost') this.c.tokenSource.add(1, { source: r.tokenSource });

    if (!failed && !r.meteringFailure) this.recordTimings(r, base, latency);
    // Semantic conventions: request duration covers failed requests too, marked by error.type.
    // Filter on error.type being absent for the ok-only E2E that /metrics exports.
    else if (failed && r.e2e >= 0) this.h.e2e.record(r.e2e, { ...latency, [ATTR.errorType]: errorType });
    this.recordSlo(model, verdicts);
  }

  private recordTimings(r: RequestRecord, base: Attributes, latency: Attributes): void {
    if (r.inputTokens > 0) this.h.tokenUsage.record(r.inputTokens, { ...base, [ATTR.tokenType]: 'input' });
    if (r.outputTokens > 0) this.h.tokenUsage.record(r.outputTokens, { ...base, [ATTR.tokenType]: 'output' });
    if (r.e2e >= 0) this.h.e2e.record(r.e2e, latency);
    if (r.ttft >= 0) this.h.ttft.record(r.ttft, latency);
    if (r.ttfo >= 0) this.h.ttfo.record(r.ttfo, latency);
    const tpot = tpotSeconds(r);
    if (tpot >= 0) this.h.tpot.record(tpot, latency);
  }

  private recordSlo(model: string, verdicts: readonly Verdict[] | null): void {
    if (!verdicts) return;
    const attrs = { [ATTR.model]: model };
    let allGood = true;
    for (const v of verdicts) {
      this.c.slo.add(1, { ...attrs, slo: v.slo, result: v.good ? 'good' : 'bad' });
      allGood &&= v.good;
    }
    this.c.judged.add(1, attrs);
    if (allGood) this.c.goodput.add(1, attrs);
  }

  /** Exports what is recorded now (tests, and a last push on shutdown). */
  flush(): Promise<void> {
    return this.provider.forceFlush();
  }

  /** A last export, bounded: a collector that is down never holds shutdown up. */
  async shutdown(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, SHUTDOWN_GRACE_MS);
      timer.unref();
    });
    await Promise.race([this.provider.shutdown().catch(() => undefined), grace]);
    clearTimeout(timer);
  }
}

/** The most buckets an exponential histogram keeps, as the native ones on /metrics. */
export const EXPONENTIAL_MAX_SIZE = 160;

/**
 * Histogram boundaries equal to the Prometheus ones (config.buckets, SLO thresholds included),
 * or base-2 exponential histograms of at most 160 buckets (the SDK lowers the scale to fit).
 */
export function bucketViews(buckets: Record<BucketSet, number[]>, aggregation: HistogramAggregation = 'explicit_bucket_histogram'): ViewOptions[] {
  const views: ViewOptions[] = [];
  for (const key of Object.keys(OTLP_INSTRUMENTS) as InstrumentKey[]) {
    const spec = instrumentSpec(key);
    if (spec.type !== 'histogram' || !spec.buckets) continue;
    views.push({
      instrumentName: spec.name,
      aggregation: aggregation === 'base2_exponential_bucket_histogram'
        ? { type: AggregationType.EXPONENTIAL_HISTOGRAM, options: { maxSize: EXPONENTIAL_MAX_SIZE, recordMinMax: true } }
        : { type: AggregationType.EXPLICIT_BUCKET_HISTOGRAM, options: { boundaries: [...buckets[spec.buckets]], recordMinMax: true } },
    });
  }
  return views;
}

/** SDK defaults < infermeter's (service.name, service.version, instance) < OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES. */
export function buildResource(extra: Record<string, string>): Resource {
  const ours = resourceFromAttributes({ [ATTR_SERVICE_NAME]: 'infermeter', [ATTR_SERVICE_VERSION]: PACKAGE_VERSION, ...extra });
  return defaultResource().merge(ours).merge(detectResources({ detectors: [envDetector] }));
}

function readVersion(): string {
  try {
    // dist/src/exporters/otlp/otlp.js → the package root, in the repo and when installed alike.
    return (JSON.parse(readFileSync(new URL('../../../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}
