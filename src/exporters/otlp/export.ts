/**
 * The OTLP exporter for the configured protocol, wrapped so that a collector that is down
 * is logged once per failure streak (and once when it recovers) instead of once per export.
 * Retrying with backoff is the exporter's own: connection errors and 429/502/503/504 are
 * retried within each export's timeout; with cumulative temporality (the default) an export
 * that still fails loses nothing, because the next one carries the totals.
 */
import { createRequire } from 'node:module';
import type { Logger } from 'pino';
import type { PushMetricExporter, ResourceMetrics } from '@opentelemetry/sdk-metrics';
import { OTLPMetricExporter as ProtoExporter } from '@opentelemetry/exporter-metrics-otlp-proto';
import { OTLPMetricExporter as JsonExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import type { OtlpProtocol, OtlpSettings } from '../../lib/otel-env.js';

type ResultCallback = Parameters<PushMetricExporter['export']>[1];
type ExportResult = Parameters<ResultCallback>[0];

const require = createRequire(import.meta.url);

/** One row per protocol; gRPC (and its @grpc/grpc-js) is loaded only when chosen. */
const EXPORTERS: Record<OtlpProtocol, (url: string) => PushMetricExporter> = {
  'http/protobuf': (url) => new ProtoExporter({ url }),
  'http/json': (url) => new JsonExporter({ url }),
  grpc: (url) => {
    const mod = require('@opentelemetry/exporter-metrics-otlp-grpc') as typeof import('@opentelemetry/exporter-metrics-otlp-grpc');
    return new mod.OTLPMetricExporter({ url });
  },
};

/** The URL resolved at startup is passed explicitly, so what is logged is where data goes. */
export function createExporter(settings: OtlpSettings, log: Logger): ReportingExporter {
  return new ReportingExporter(EXPORTERS[settings.protocol](settings.endpoint), log, settings.endpoint);
}

export class ReportingExporter implements PushMetricExporter {
  /** Consecutive failed exports; 0 while healthy. */
  failureStreak = 0;
  exportsSucceeded = 0;
  exportsFailed = 0;
  /** The inner exporter's choices (temporality, aggregation) where it makes them. */
  readonly selectAggregationTemporality?: PushMetricExporter['selectAggregationTemporality'];
  readonly selectAggregation?: PushMetricExporter['selectAggregation'];

  constructor(
    private readonly inner: PushMetricExporter,
    private readonly log: Logger,
    private readonly endpoint: string,
  ) {
    if (inner.selectAggregationTemporality) this.selectAggregationTemporality = inner.selectAggregationTemporality.bind(inner);
    if (inner.selectAggregation) this.selectAggregation = inner.selectAggregation.bind(inner);
  }

  export(metrics: ResourceMetrics, done: ResultCallback): void {
    this.inner.export(metrics, (result) => {
      this.note(result);
      done(result);
    });
  }

  private note(result: ExportResult): void {
    // ExportResultCode.SUCCESS is 0 (@opentelemetry/core).
    if (result.code === 0) {
      this.exportsSucceeded++;
      if (this.failureStreak > 0) this.log.info({ endpoint: this.endpoint, failedExports: this.failureStreak }, 'OTLP export recovered');
      this.failureStreak = 0;
      return;
    }
    this.exportsFailed++;
    this.failureStreak++;
    if (this.failureStreak === 1) {
      this.log.warn({ endpoint: this.endpoint, err: result.error?.message ?? 'unknown error' },
        'OTLP export failed; retrying with backoff each export period, logged again only on recovery');
    } else {
      this.log.debug({ endpoint: this.endpoint, failedExports: this.failureStreak }, 'OTLP export failed again');
    }
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }
}
