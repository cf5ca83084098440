/**
 * The OTLP metrics consumer: decides at startup from the OTEL_* environment (a bad value throws
 * here, naming the variable) and, only when OTLP is on, loads the OpenTelemetry SDK (about
 * 85 ms and 5 MB that a Prometheus-only daemon never pays). Batches that arrive while the SDK
 * loads wait (lib/until-ready.ts) and are recorded once it is ready.
 */
import type { Logger } from 'pino';
import { otlpSettings } from '../../lib/otel-env.js';
import { UntilReady, loadThenFeed } from '../../lib/until-ready.js';
import type { OtlpConfigOptions, OtlpRecorder } from './otlp.js';
import type { JudgedBatch } from '../../metrics/batch.js';
import type { BatchConsumer } from '../../metrics/consumer.js';

/** Batches are posted at most every 20 ms and the SDK loads in well under a second. */
const MAX_PENDING_BATCHES = 500;

export interface OtlpHook extends BatchConsumer {
  /** The recorder, once loaded (tests). */
  ready: Promise<OtlpRecorder | null>;
  close(): Promise<void>;
}

export function startOtlp(config: OtlpConfigOptions, log: Logger): OtlpHook | null {
  // process.env: the exporter reads its endpoint, headers and TLS files from there too.
  const settings = otlpSettings(process.env);
  if (!settings) return null;
  log.info({ endpoint: settings.endpoint, protocol: settings.protocol, intervalMs: settings.intervalMs, histograms: settings.histogramAggregation }, 'OTLP metrics export on');
  const batches = new UntilReady<JudgedBatch>(MAX_PENDING_BATCHES);
  const ready = loadThenFeed(
    batches,
    async () => (await import('./otlp.js')).createOtlpRecorder(config, log, settings),
    (recorder) => (b) => recorder.ingest(b),
    (err) => log.error({ err: err.message }, 'OTLP export unavailable: cannot load the OpenTelemetry SDK'),
  );
  return {
    name: 'otlp',
    ready,
    ingest: (batch) => batches.push(batch),
    async close() {
      await (await ready)?.shutdown();
    },
  };
}
