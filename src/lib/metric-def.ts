/**
 * What a metric definition is: the shape every table of metrics (the catalog, the collectors'
 * column and alias tables) is written in, and the bucket lists histograms choose from. A leaf,
 * so that the tables can live with the code that fills them (docs/architecture.md).
 */
import { Gauge, type Registry } from 'prom-client';

export type MetricType = 'counter' | 'gauge' | 'histogram';

export interface MetricDef {
  name: string;
  type: MetricType;
  /** UCUM-ish unit for OTLP ("s", "{token}", "{request}", "1", "W", "Cel", "Hz", "By"). */
  unit: string;
  help: string;
  labels: readonly string[];
  /** Histograms: which configurable bucket list they use. */
  buckets?: BucketSet;
  /** Where the metric comes from, for README. */
  source: 'proxy' | 'slo' | 'collector' | 'gpu' | 'engine' | 'host' | 'process';
}

export type BucketSet = 'ttft' | 'tpot' | 'e2e' | 'tokens' | 'chunk' | 'ttft_by_prompt' | 'tpot_by_concurrency' | 'silence' | 'abort' | 'release';

/**
 * OTel GenAI bucket boundaries, extended upward: the semconv lists stop at 10 s (TTFT) and
 * 81.92 s (E2E), but long-context and reasoning requests go far past that (vLLM goes to 2560 s).
 */
export const DEFAULT_BUCKETS: Record<BucketSet, readonly number[]> = {
  ttft: [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 320, 640, 1280, 2560],
  tpot: [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 10, 20, 40, 80],
  e2e: [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92, 163.84, 327.68, 655.36, 1310.72, 2621.44],
  tokens: [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864],
  chunk: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 10, 20, 40, 80],
  // The breakdown histograms (BREAKDOWN_METRICS) multiply their series by 7 prompt classes or 10
  // concurrency bands, so they get fewer, wider buckets: enough for a P50/P99 per class to land
  // within one bucket of the truth, at a third of the series a full list would cost.
  ttft_by_prompt: [0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 120],
  tpot_by_concurrency: [0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28],
  // A stream's longest silence (docs/stream-health.md): from a slow token to a tool call held back for a minute.
  silence: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300],
  // Abort propagation (docs/waste.md): the proxy's own hop, microseconds when its loop is free, up to a loop stalled for a second.
  abort: [0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
  // An engine's release of aborted requests, read at its scrapes (seconds apart).
  release: [0.25, 0.5, 1, 2, 5, 10, 15, 30, 60],
};

/** A gauge registered from its definition (collectors and the metrics side alike). */
export function gauge(registry: Registry, d: MetricDef): Gauge {
  return new Gauge({ name: d.name, help: d.help, labelNames: [...d.labels], registers: [registry] });
}
