/**
 * Records request records into prom-client metrics built from the catalog. Runs on the
 * metrics side (worker thread), never on the proxy's event loop.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import { REQUEST_METRICS, type BucketSet, type MetricDef } from './catalog.js';
import { SeriesHistogram } from './histogram.js';
import { tpotSeconds, type RecordBatch, type RequestRecord } from './record.js';
import { judge } from '../slo/judge.js';
import { SLO_NAMES, thresholdsFor, type SloConfig } from '../slo/config.js';

type Def = (typeof REQUEST_METRICS)[number];
type ByName<N extends Def['name']> = Extract<Def, { name: N }>;

function def<N extends Def['name']>(name: N): ByName<N> {
  return REQUEST_METRICS.find((d) => d.name === name) as ByName<N>;
}

export function histogram(registry: Registry, d: MetricDef, buckets: Record<BucketSet, number[]>): SeriesHistogram {
  return new SeriesHistogram(d.name, d.help, d.labels, buckets[d.buckets!], registry);
}
export function counter(registry: Registry, d: MetricDef): Counter {
  return new Counter({ name: d.name, help: d.help, labelNames: [...d.labels], registers: [registry] });
}
export function gauge(registry: Registry, d: MetricDef): Gauge {
  return new Gauge({ name: d.name, help: d.help, labelNames: [...d.labels], registers: [registry] });
}

const GENERATION_OPERATIONS = new Set(['chat', 'text_completion']);

export class RequestMetrics {
  private readonly ttft: SeriesHistogram;
  private readonly ttfo: SeriesHistogram;
  private readonly tpot: SeriesHistogram;
  private readonly e2e: SeriesHistogram;
  private readonly chunk: SeriesHistogram;
  private readonly tokenUsage: SeriesHistogram;
  private readonly requests: Counter;
  private readonly tokens: Counter;
  private readonly tokenSource: Counter;
  private readonly meteringFailures: Counter;
  private readonly inFlight: Gauge;
  private readonly slo: Counter;
  private readonly goodput: Counter;
  private readonly judged: Counter;

  constructor(
    registry: Registry,
    buckets: Record<BucketSet, number[]>,
    private readonly provider: string,
    private readonly slos: SloConfig,
    private readonly modelLabel: (model: string) => string,
  ) {
    this.ttft = histogram(registry, def('gen_ai_server_time_to_first_token_seconds'), buckets);
    this.ttfo = histogram(registry, def('infermeter_time_to_first_output_seconds'), buckets);
    this.tpot = histogram(registry, def('gen_ai_server_time_per_output_token_seconds'), buckets);
    this.e2e = histogram(registry, def('gen_ai_server_request_duration_seconds'), buckets);
    this.chunk = histogram(registry, def('infermeter_inter_chunk_latency_seconds'), buckets);
    this.tokenUsage = histogram(registry, def('gen_ai_client_token_usage'), buckets);
    this.requests = counter(registry, def('infermeter_requests_total'));
    this.tokens = counter(registry, def('infermeter_tokens_total'));
    this.tokenSource = counter(registry, def('infermeter_output_token_source_total'));
    this.meteringFailures = counter(registry, def('infermeter_metering_failures_total'));
    this.inFlight = gauge(registry, def('infermeter_requests_in_flight'));
    this.slo = counter(registry, def('infermeter_slo_requests_total'));
    this.goodput = counter(registry, def('infermeter_goodput_requests_total'));
    this.judged = counter(registry, def('infermeter_slo_judged_requests_total'));
    const thresholdGauge = gauge(registry, def('infermeter_slo_threshold_seconds'));
    for (const model of ['default', ...Object.keys(slos.models)]) {
      const t = thresholdsFor(slos, model === 'default' ? '' : model);
      for (const name of SLO_NAMES) if (t[name] !== undefined) thresholdGauge.set({ gen_ai_request_model: model, slo: name }, t[name]);
    }
  }

  private readonly seeded = new Set<string>();

  /**
   * Creates a model's good/bad series at 0 the first time it is judged: a counter series
   * born at its first increment hides that increment from rate(), so the first bad request
   * after a quiet period would never reach an alert.
   */
  private seedSloSeries(model: string): void {
    if (this.seeded.has(model)) return;
    this.seeded.add(model);
    const t = thresholdsFor(this.slos, model);
    for (const slo of SLO_NAMES) {
      if (t[slo] === undefined) continue;
      for (const result of ['good', 'bad']) this.slo.inc({ gen_ai_request_model: model, slo, result }, 0);
    }
    this.goodput.inc({ gen_ai_request_model: model }, 0);
    this.judged.inc({ gen_ai_request_model: model }, 0);
  }

  ingest(batch: RecordBatch): void {
    this.inFlight.set(batch.inFlight);
    for (const r of batch.records) this.record(r);
  }

  record(r: RequestRecord): void {
    const model = this.modelLabel(r.model);
    const labels = { gen_ai_operation_name: r.operation, gen_ai_provider_name: this.provider, gen_ai_request_model: model };
    this.requests.inc({ ...labels, route: r.route, outcome: r.outcome });
    if (r.meteringFailure) this.meteringFailures.inc({ reason: r.meteringFailure });
    if (!GENERATION_OPERATIONS.has(r.operation)) return;

    if (r.chunkGaps) {
      // One series lookup per record, not per gap: a stream brings dozens of gaps.
      const series = this.chunk.labels(labels);
      for (const gap of r.chunkGaps) series.observe(gap);
    }
    if (r.inputTokens > 0) this.tokens.inc({ ...labels, gen_ai_token_type: 'input' }, r.inputTokens);
    if (r.outputTokens > 0) this.tokens.inc({ ...labels, gen_ai_token_type: 'output' }, r.outputTokens);
    if (r.outcome !== 'rejected' && r.outcome !== 'worker_lost') this.tokenSource.inc({ source: r.tokenSource });

    if (r.outcome === 'ok' && !r.meteringFailure) {
      if (r.inputTokens > 0) this.tokenUsage.observe({ ...labels, gen_ai_token_type: 'input' }, r.inputTokens);
      if (r.outputTokens > 0) this.tokenUsage.observe({ ...labels, gen_ai_token_type: 'output' }, r.outputTokens);
      if (r.e2e >= 0) this.e2e.observe(labels, r.e2e);
      if (r.ttft >= 0) this.ttft.observe(labels, r.ttft);
      if (r.ttfo >= 0) this.ttfo.observe(labels, r.ttfo);
      const tpot = tpotSeconds(r);
      if (tpot >= 0) this.tpot.observe(labels, tpot);
    }

    const verdicts = judge(this.slos, model, r);
    if (!verdicts) return;
    this.seedSloSeries(model);
    let allGood = true;
    for (const v of verdicts) {
      this.slo.inc({ gen_ai_request_model: model, slo: v.slo, result: v.good ? 'good' : 'bad' });
      allGood &&= v.good;
    }
    this.judged.inc({ gen_ai_request_model: model });
    if (allGood) this.goodput.inc({ gen_ai_request_model: model });
  }
}
