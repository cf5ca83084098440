/**
 * The workload trace's lines as OpenTelemetry log records (--workload-trace-otlp), so that a
 * fleet's traces reach whatever store its OpenTelemetry Collector writes to: the body is the
 * line exactly as written to the file (docs/workload-trace.md, "The same lines over OTLP").
 * Endpoint and protocol come from the standard environment (OTEL_EXPORTER_OTLP_[LOGS_]*), as
 * for the metrics and the spans; the SDK's batching processor does the sending. Loaded only
 * when asked for (trace.ts).
 *
 * The exporters are OpenTelemetry's own @opentelemetry/exporter-logs-otlp-* packages, the same
 * version as the metric and span exporters infermeter already ships; gRPC loads only when asked.
 */
import { createRequire } from 'node:module';
import type { Logger } from 'pino';
import { BatchLogRecordProcessor, LoggerProvider, type LogRecordExporter } from '@opentelemetry/sdk-logs';
import { OTLPLogExporter as ProtoExporter } from '@opentelemetry/exporter-logs-otlp-proto';
import { OTLPLogExporter as JsonExporter } from '@opentelemetry/exporter-logs-otlp-http';
import { endpointFor, protocolFor, type OtlpProtocol } from '../../lib/otel-env.js';
import { PACKAGE_VERSION, buildResource } from '../otlp/otlp.js';

const require = createRequire(import.meta.url);
type LogExporter = LogRecordExporter;

/** A final export on shutdown must not hold the daemon up when the collector is gone. */
const SHUTDOWN_GRACE_MS = 2_000;
export const EVENT_NAME = 'infermeter.workload_trace.request';

const EXPORTERS: Record<OtlpProtocol, (url: string) => LogExporter> = {
  'http/protobuf': (url) => new ProtoExporter({ url }),
  'http/json': (url) => new JsonExporter({ url }),
  grpc: (url) => {
    const grpc = require('@opentelemetry/exporter-logs-otlp-grpc') as typeof import('@opentelemetry/exporter-logs-otlp-grpc');
    return new grpc.OTLPLogExporter({ url });
  },
};

export interface TraceLogs {
  emit(lines: readonly { text: string; at: number; model: string; api: string }[]): void;
  shutdown(): Promise<void>;
}

export function createTraceLogs(facts: { startUnixMs: number; blockTokens: number }, log: Logger, env: NodeJS.ProcessEnv = process.env): TraceLogs {
  const protocol = protocolFor(env, 'LOGS');
  const endpoint = endpointFor(env, protocol, 'LOGS');
  const provider = new LoggerProvider({
    resource: buildResource({}),
    processors: [new BatchLogRecordProcessor({ exporter: EXPORTERS[protocol](endpoint), scheduledDelayMillis: 1000 })],
  });
  const logger = provider.getLogger('infermeter.workload_trace', PACKAGE_VERSION);
  log.info({ endpoint, protocol }, 'workload trace lines also go out as OTLP log records');
  return {
    emit(lines) {
      for (const l of lines) {
        logger.emit({
          eventName: EVENT_NAME,
          timestamp: l.at,
          body: l.text,
          attributes: {
            'infermeter.workload_trace.start_unix_ms': facts.startUnixMs,
            'infermeter.workload_trace.block_size': facts.blockTokens,
            'gen_ai.request.model': l.model,
            'infermeter.api': l.api,
          },
        });
      }
    },
    async shutdown() {
      await Promise.race([provider.shutdown(), new Promise((resolve) => setTimeout(resolve, SHUTDOWN_GRACE_MS).unref())]);
    },
  };
}
