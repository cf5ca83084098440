/**
 * A row of the consumer table (consumers.ts), in the shape of the collector table
 * (collectors/types.ts): a name, whether the configuration turns it on, and how to make it.
 * The consumer itself implements metrics/consumer.ts's BatchConsumer.
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { MachineReader } from '../collectors/snapshot.js';
import type { BatchConsumer } from '../metrics/consumer.js';
import type { ModelLabels } from '../metrics/models.js';
import type { SideOptions } from './options.js';

/** What a consumer gets to work with. The registry is passed in: no global singletons. */
export interface ConsumerContext {
  registry: Registry;
  /** What the collectors last read (collectors/snapshot.ts): every reader of GPU, engine and host state. */
  machine: MachineReader;
  options: SideOptions;
  log: Logger;
  /** The model label set, and which upstreams list each label (bottleneck attribution). */
  models: ModelLabels;
  /** A consumer an earlier row made, by its class; undefined when that row is off (the status page reads the trail's slow-request log). */
  earlier<T extends BatchConsumer>(kind: abstract new (...args: never[]) => T): T | undefined;
}

export interface ConsumerEntry {
  name: string;
  enabled(options: SideOptions): boolean;
  /** null: it turned itself off on what it found (OTLP: no OTEL_* variable asks for it). */
  create(ctx: ConsumerContext): BatchConsumer | null;
}
