/**
 * The one contract of a reader of judged requests on the metrics side, in the shape of the
 * OpenTelemetry Collector's components: each consumer (request metrics, OTLP, the trail and the
 * slow-request log, the status page, the bottleneck monitor, ...) sits behind this interface and
 * is listed in one table, side/consumers.ts. The metrics side hands each one every judged batch,
 * every reload's live settings, and its share of the metrics listener.
 */
import type { FastifyInstance } from 'fastify';
import type { JudgedBatch } from './batch.js';
import type { LiveSettings } from './live.js';

/**
 * A consumer's routes on the metrics listener, registered as an encapsulated Fastify plugin
 * (side/listener.ts). The listener's guard (--web.config.file) has already run; a route
 * answers GET (HEAD follows from it) and leaves every other method to the listener's 405.
 */
export type Routes = (app: FastifyInstance) => void;

export interface BatchConsumer {
  /** Its row's name in side/consumers.ts (logs, tests). */
  readonly name: string;
  /** Every batch, in order; never throws, never awaits (the next batch is 20 ms away). */
  ingest(batch: JudgedBatch): void;
  /** A reload's live settings (SLO thresholds, tenant limit, ...): applied from the next batch on. */
  applyLive?(live: LiveSettings): void;
  /** Timers and background work begin here, once the side starts (not in the constructor). */
  start?(): void;
  /** What it serves on the metrics listener, if anything. */
  routes?: Routes;
  /** Stops timers, flushes what it exports. */
  close?(): Promise<void> | void;
}
