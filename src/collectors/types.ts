import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { EngineKind } from '../lib/engines.js';
import type { UpstreamTlsFiles } from '../lib/tls.js';
import type { MachineSnapshot } from './snapshot.js';

/** What the collectors read of the configuration (config.ts's CollectorOptions carries it; docs/architecture.md). */
import type { UpstreamSpec } from '../lib/upstream-spec.js';

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
  /** Every upstream (issue 26): the engine collector scrapes each, the GPU join ties GPUs to them. */
  upstreams: UpstreamSpec[];
}

/** What a collector gets to work with. The registry is passed in: no global singletons. */
export interface CollectorContext {
  registry: Registry;
  config: CollectorOptions;
  log: Logger;
  /**
   * Where it publishes what it read, beside its gauges (snapshot.ts). The runner always hands
   * its own; a collector made alone (a test of its gauges) keeps one that nobody reads.
   */
  machine?: MachineSnapshot;
}

/**
 * One source of facts (node_exporter style). `collect()` is called by the runner on the
 * collector's interval; it updates its own metrics and its part of the machine snapshot, and
 * throws a CollectorError when the source failed. The runner, not the collector, reports health.
 */
export interface Collector {
  readonly name: string;
  /** Labels besides `collector` on its health series (the engine collector's `upstream`). */
  readonly labels?: Record<string, string>;
  collect(signal: AbortSignal): Promise<void>;
  close?(): Promise<void> | void;
}

export interface CollectorEntry {
  name: string;
  /** Seconds between runs, from config. */
  interval(config: CollectorOptions): number;
  enabled(config: CollectorOptions): boolean;
  /** One collector, or one per source (the engine collector: one per upstream). */
  create(ctx: CollectorContext): Collector | Collector[];
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
