import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { Config } from '../config.js';

/** What a collector gets to work with. The registry is passed in: no global singletons. */
export interface CollectorContext {
  registry: Registry;
  config: Config;
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
  interval(config: Config): number;
  enabled(config: Config): boolean;
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
