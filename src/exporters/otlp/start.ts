/**
 * The OTLP hook MetricsSide holds: decides at startup from the OTEL_* environment (a bad
 * value throws here, naming the variable) and, only when OTLP is on, loads the
 * OpenTelemetry SDK (about 85 ms and 5 MB that a Prometheus-only daemon never pays).
 * Batches that arrive while the SDK loads are kept and recorded once it is ready.
 */
import type { Logger } from 'pino';
import type { SloConfig } from '../../slo/config.js';
import { otlpSettings } from '../../lib/otel-env.js';
import type { OtlpConfigOptions, OtlpRecorder } from './otlp.js';
import type { RecordBatch } from '../../metrics/batch.js';

/** Batches are posted at most every 20 ms and the SDK loads in well under a second. */
const MAX_PENDING_BATCHES = 500;

export interface OtlpHook {
  ingest(batch: RecordBatch): void;
  /** A reload's SLO thresholds (kept for the recorder if the SDK is still loading). */
  setSlos(slos: SloConfig): void;
  /** The recorder, once loaded (tests). */
  ready: Promise<OtlpRecorder | null>;
  shutdown(): Promise<void>;
}

export function startOtlp(config: OtlpConfigOptions, log: Logger, modelLabel: (model: string) => string): OtlpHook | null {
  // process.env: the exporter reads its endpoint, headers and TLS files from there too.
  const settings = otlpSettings(process.env);
  if (!settings) return null;
  log.info({ endpoint: settings.endpoint, protocol: settings.protocol, intervalMs: settings.intervalMs, histograms: settings.histogramAggregation }, 'OTLP metrics export on');
  let recorder: OtlpRecorder | null = null;
  let pending: RecordBatch[] | null = [];
  let slos = config.slos;
  const ready = import('./otlp.js').then(
    (m) => {
      recorder = m.createOtlpRecorder({ ...config, slos }, log, modelLabel, settings);
      for (const b of pending ?? []) recorder.ingest(b);
      pending = null;
      return recorder;
    },
    (err: Error) => {
      pending = null;
      log.error({ err: err.message }, 'OTLP export unavailable: cannot load the OpenTelemetry SDK');
      return null;
    },
  );
  return {
    ready,
    setSlos(next) {
      slos = next;
      recorder?.setSlos(next);
    },
    ingest(batch) {
      if (recorder) recorder.ingest(batch);
      else if (pending && pending.length < MAX_PENDING_BATCHES) pending.push(batch);
    },
    async shutdown() {
      await (await ready)?.shutdown();
    },
  };
}
