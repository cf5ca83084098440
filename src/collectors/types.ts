import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { EngineKind } from '../lib/engines.js';
import type { UpstreamTlsFiles } from '../lib/tls.js';

/** What the collectors read of the configuration (config.ts's CollectorOptions carries it; docs/architecture.md). */
export interface CollectorOptions extends UpstreamTlsFiles {
  engine: EngineKind;
  nvidiaSmi: string;
  dmonColumns: string;
  gpuInterval: number;
  gpuSource: 'auto' | 'nvidia-smi' | 'dcgm-exporter';
  dcgmExporterUrl: string;
  engineMetrics: string;
  engineInterval: number;
  hostInterval: number;
  collectorGpu: boolean;
  collectorEngine: boolean;
  collectorHost: boolean;
}

/** What a collector gets to work with. The registry is passed in: no global singletons. */
export interface CollectorContext {
  registry: Registry;
  config: CollectorOptions;
  log: Logger;
}

/**
 * One source of facts (node_exporter style). `collect()` is called by the runner on the
 * collector's interval; it updates its own metrics and throws a CollectorError when the
 * source failed. The runner, not the collector, reports health.
 */
export interface Collector {
  readonly name: string;
  collect(signal: AbortSignal): Promise<void>;
  close?(): Promise<void> | void;
}

export interface CollectorEntry {
  name: string;
  /** Seconds between runs, from config. */
  interval(config: CollectorOptions): number;
  enabled(config: CollectorOptions): boolean;
  create(ctx: CollectorContext): Collector;
}

/** A failed collection, with a bounded `kind` for infermeter_collector_errors_total. */
export class CollectorError extends Error {
  readonly kind: string;
  constructor(kind: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'CollectorError';
    this.kind = kind;
  }
}
