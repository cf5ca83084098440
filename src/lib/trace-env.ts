/**
 * Whether and how to trace, from the standard OpenTelemetry variables, resolved once at
 * startup (a bad value stops startup naming the variable): on only when
 * OTEL_TRACES_EXPORTER lists `otlp` (nothing is sent anywhere unasked), the sampler from
 * OTEL_TRACES_SAMPLER/_ARG (default parentbased_always_on), and the endpoint and protocol
 * from OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT/_PROTOCOL. Plain data: it crosses into the
 * metrics thread inside Config.
 */
import { ConfigError } from './errors.js';
import { endpointFor, protocolFor, value, type OtlpProtocol } from './otel-env.js';

export const SAMPLERS = [
  'always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio',
] as const;
export type SamplerName = (typeof SAMPLERS)[number];

export interface TraceSettings {
  protocol: OtlpProtocol;
  /** Where spans go (the URL handed to the exporter). */
  endpoint: string;
  sampler: SamplerName;
  /** Sampling ratio for the *traceidratio samplers (1 otherwise). */
  ratio: number;
}

export function traceSettings(env: NodeJS.ProcessEnv): TraceSettings | null {
  if (value(env, 'OTEL_SDK_DISABLED')?.toLowerCase() === 'true') return null;
  const exporters = value(env, 'OTEL_TRACES_EXPORTER');
  if (exporters === undefined || !exporters.split(',').map((s) => s.trim().toLowerCase()).includes('otlp')) return null;
  const protocol = protocolFor(env, 'TRACES');
  const sampler = (value(env, 'OTEL_TRACES_SAMPLER')?.toLowerCase() ?? 'parentbased_always_on') as SamplerName;
  if (!SAMPLERS.includes(sampler)) {
    throw new ConfigError('env OTEL_TRACES_SAMPLER', `expected one of ${SAMPLERS.join(', ')}, got "${env['OTEL_TRACES_SAMPLER']}"`);
  }
  let ratio = 1;
  if (sampler.endsWith('traceidratio')) {
    const arg = value(env, 'OTEL_TRACES_SAMPLER_ARG');
    ratio = arg === undefined ? 1 : Number(arg);
    if (!(ratio >= 0 && ratio <= 1)) throw new ConfigError('env OTEL_TRACES_SAMPLER_ARG', `expected a ratio from 0 to 1, got "${arg}"`);
  }
  return { protocol, endpoint: endpointFor(env, protocol, 'TRACES'), sampler, ratio };
}
