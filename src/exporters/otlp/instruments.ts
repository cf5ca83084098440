/**
 * The OTLP names of the request metrics, as data. Unit, description and buckets come from
 * the catalog; only the dotted name is chosen here. Each name is picked so that the
 * standard OTLP → Prometheus translation (dots to underscores, `_seconds` for unit `s`,
 * `_total` for counters, `{…}` units dropped) gives back the catalog's Prometheus name:
 * dashboards and alert rules work whichever way the data arrives.
 * GenAI semantic conventions: https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-metrics/
 */
import { REQUEST_METRICS } from '../../metrics/catalog.js';
import { type BucketSet, type MetricType } from '../../lib/metric-def.js';

export const OTLP_INSTRUMENTS = {
  ttft: { otel: 'gen_ai.server.time_to_first_token', prom: 'gen_ai_server_time_to_first_token_seconds' },
  ttfo: { otel: 'infermeter.time_to_first_output', prom: 'infermeter_time_to_first_output_seconds' },
  tpot: { otel: 'gen_ai.server.time_per_output_token', prom: 'gen_ai_server_time_per_output_token_seconds' },
  e2e: { otel: 'gen_ai.server.request.duration', prom: 'gen_ai_server_request_duration_seconds' },
  chunk: { otel: 'infermeter.inter_chunk_latency', prom: 'infermeter_inter_chunk_latency_seconds' },
  tokenUsage: { otel: 'gen_ai.client.token.usage', prom: 'gen_ai_client_token_usage' },
  requests: { otel: 'infermeter.requests', prom: 'infermeter_requests_total' },
  tokens: { otel: 'infermeter.tokens', prom: 'infermeter_tokens_total' },
  tokenSource: { otel: 'infermeter.output_token_source', prom: 'infermeter_output_token_source_total' },
  meteringFailures: { otel: 'infermeter.metering_failures', prom: 'infermeter_metering_failures_total' },
  inFlight: { otel: 'infermeter.requests_in_flight', prom: 'infermeter_requests_in_flight' },
  slo: { otel: 'infermeter.slo_requests', prom: 'infermeter_slo_requests_total' },
  goodput: { otel: 'infermeter.goodput_requests', prom: 'infermeter_goodput_requests_total' },
  judged: { otel: 'infermeter.slo_judged_requests', prom: 'infermeter_slo_judged_requests_total' },
} as const;

export type InstrumentKey = keyof typeof OTLP_INSTRUMENTS;

export interface InstrumentSpec {
  name: string;
  type: MetricType;
  unit: string;
  description: string;
  buckets?: BucketSet;
}

export function instrumentSpec(key: InstrumentKey): InstrumentSpec {
  const row = OTLP_INSTRUMENTS[key];
  const def = REQUEST_METRICS.find((d) => d.name === row.prom);
  if (!def) throw new Error(`OTLP instrument ${row.otel}: ${row.prom} is not in the catalog`);
  const spec: InstrumentSpec = { name: row.otel, type: def.type, unit: def.unit, description: def.help };
  if ('buckets' in def) spec.buckets = def.buckets;
  return spec;
}

/** OTel attribute names for the request labels (REQUEST_LABELS is their Prometheus spelling). */
export const ATTR = {
  operation: 'gen_ai.operation.name',
  provider: 'gen_ai.provider.name',
  model: 'gen_ai.request.model',
  tokenType: 'gen_ai.token.type',
  /** The latency histograms' `api` (record/routes.ts API_LABELS): no OTel convention names the wire API; undotted, so it reaches Prometheus as the same label. */
  api: 'api',
  errorType: 'error.type',
} as const;

/**
 * The Prometheus name an OTLP receiver (OpenTelemetry Collector, Prometheus' OTLP endpoint)
 * derives from an instrument, per the OTLP → Prometheus compatibility spec; used by tests
 * to keep both exports in step.
 */
export function prometheusNameOf(spec: InstrumentSpec): string {
  let name = spec.name.replace(/\./g, '_');
  if (spec.unit === 's' && !name.endsWith('_seconds')) name += '_seconds';
  if (spec.type === 'counter') name += '_total';
  return name;
}
