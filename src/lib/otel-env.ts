/**
 * Whether and how to push OTLP, from the standard OpenTelemetry environment variables,
 * resolved once at startup: on/off, protocol, endpoint and export period. Headers, timeout,
 * compression, TLS files and temporality preference are read by the exporter itself from
 * the same standard variables.
 */
import { ConfigError } from './errors.js';

export const OTLP_PROTOCOLS = ['http/protobuf', 'http/json', 'grpc'] as const;
export type OtlpProtocol = (typeof OTLP_PROTOCOLS)[number];

/**
 * OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION (OTLP exporter spec). The JS
 * exporters do not read it themselves, so infermeter does: exponential histograms are the
 * OTLP counterpart of Prometheus native histograms.
 */
export const HISTOGRAM_AGGREGATIONS = ['explicit_bucket_histogram', 'base2_exponential_bucket_histogram'] as const;
export type HistogramAggregation = (typeof HISTOGRAM_AGGREGATIONS)[number];

export interface OtlpSettings {
  protocol: OtlpProtocol;
  /** Where metrics go (the URL handed to the exporter). */
  endpoint: string;
  intervalMs: number;
  timeoutMs: number;
  histogramAggregation: HistogramAggregation;
}

/** The SDK defaults (OpenTelemetry SDK environment variable spec). */
const DEFAULT_INTERVAL_MS = 60_000;
const DEFAULT_TIMEOUT_MS = 30_000;

/**
 * null when OTLP is off. On when OTEL_METRICS_EXPORTER lists `otlp`, or, with that variable
 * unset, when an OTLP endpoint is set. OTEL_SDK_DISABLED=true and OTEL_METRICS_EXPORTER=none
 * turn it off. Unlike the SDK's own default, nothing is pushed to localhost unasked: a
 * daemon that users scrape should not start sending somewhere because nothing was said.
 */
export function otlpSettings(env: NodeJS.ProcessEnv): OtlpSettings | null {
  if (value(env, 'OTEL_SDK_DISABLED')?.toLowerCase() === 'true') return null;
  const exporters = value(env, 'OTEL_METRICS_EXPORTER');
  const endpointSet = value(env, 'OTEL_EXPORTER_OTLP_METRICS_ENDPOINT') !== undefined || value(env, 'OTEL_EXPORTER_OTLP_ENDPOINT') !== undefined;
  const wanted = exporters === undefined ? endpointSet : exporters.split(',').map((s) => s.trim().toLowerCase()).includes('otlp');
  if (!wanted) return null;

  const protocol = protocolFor(env, 'METRICS');
  const intervalMs = millis(env, 'OTEL_METRIC_EXPORT_INTERVAL', DEFAULT_INTERVAL_MS);
  // The periodic reader refuses a timeout longer than its interval.
  const timeoutMs = Math.min(millis(env, 'OTEL_METRIC_EXPORT_TIMEOUT', DEFAULT_TIMEOUT_MS), intervalMs);
  return { protocol, endpoint: endpointFor(env, protocol, 'METRICS'), intervalMs, timeoutMs, histogramAggregation: histogramAggregationFrom(env) };
}

function histogramAggregationFrom(env: NodeJS.ProcessEnv): HistogramAggregation {
  const name = 'OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION';
  const v = value(env, name)?.toLowerCase();
  if (v === undefined) return 'explicit_bucket_histogram';
  if (!(HISTOGRAM_AGGREGATIONS as readonly string[]).includes(v)) {
    throw new ConfigError(`env ${name}`, `expected one of ${HISTOGRAM_AGGREGATIONS.join(', ')}, got "${env[name]}"`);
  }
  return v as HistogramAggregation;
}

/** The signal's protocol: OTEL_EXPORTER_OTLP_<SIGNAL>_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf. */
export function protocolFor(env: NodeJS.ProcessEnv, signal: 'METRICS' | 'TRACES' | 'LOGS'): OtlpProtocol {
  for (const name of [`OTEL_EXPORTER_OTLP_${signal}_PROTOCOL`, 'OTEL_EXPORTER_OTLP_PROTOCOL']) {
    const v = value(env, name);
    if (v === undefined) continue;
    if (!(OTLP_PROTOCOLS as readonly string[]).includes(v)) {
      throw new ConfigError(`env ${name}`, `expected one of ${OTLP_PROTOCOLS.join(', ')}, got "${v}"`);
    }
    return v as OtlpProtocol;
  }
  return 'http/protobuf';
}

/** The signal's URL: its own endpoint as given, else the generic one (+ /v1/<signal> for HTTP), else localhost. */
export function endpointFor(env: NodeJS.ProcessEnv, protocol: OtlpProtocol, signal: 'METRICS' | 'TRACES' | 'LOGS'): string {
  const path = `/v1/${signal.toLowerCase()}`;
  const specific = value(env, `OTEL_EXPORTER_OTLP_${signal}_ENDPOINT`);
  if (specific !== undefined) return specific;
  const base = value(env, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  if (protocol === 'grpc') return base ?? 'http://localhost:4317';
  // The signal path is appended to the generic endpoint for HTTP, not for gRPC.
  return base !== undefined ? `${base.replace(/\/+$/, '')}${path}` : `http://localhost:4318${path}`;
}

function millis(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const v = value(env, name);
  if (v === undefined) return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) throw new ConfigError(`env ${name}`, `expected a positive whole number of milliseconds, got "${v}"`);
  return n;
}

/** Empty means unset, as the SDK treats it. */
export function value(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const v = env[name]?.trim();
  return v === undefined || v === '' ? undefined : v;
}
