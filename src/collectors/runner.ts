import { Counter, Gauge, type Registry } from 'prom-client';
import type { Logger } from 'pino';
import { COLLECTOR_HEALTH_METRICS } from './health-metrics.js';
import { CollectorError, type Collector, type CollectorEntry, type CollectorOptions } from './types.js';

const [UP, LAST_SUCCESS, DURATION, ERRORS] = COLLECTOR_HEALTH_METRICS;

/**
 * Runs each enabled collector on its own interval, times it, and reports its health.
 * A failing collector sets up=0 and logs once per transition; it never throws out of here.
 */
export class CollectorRunner {
  private readonly up: Gauge;
  private readonly lastSuccess: Gauge;
  private readonly duration: Gauge;
  private readonly errors: Counter;
  private readonly running: { collector: Collector; timer: NodeJS.Timeout; abort: AbortController; busy: boolean; healthy: boolean | null }[] = [];

  constructor(
    private readonly registry: Registry,
    private readonly config: CollectorOptions,
    private readonly log: Logger,
  ) {
    this.up = new Gauge({ name: UP.name, help: UP.help, labelNames: UP.labels, registers: [registry] });
    this.lastSuccess = new Gauge({ name: LAST_SUCCESS.name, help: LAST_SUCCESS.help, labelNames: LAST_SUCCESS.labels, registers: [registry] });
    this.duration = new Gauge({ name: DURATION.name, help: DURATION.help, labelNames: DURATION.labels, registers: [registry] });
    this.errors = new Counter({ name: ERRORS.name, help: ERRORS.help, labelNames: ERRORS.labels, registers: [registry] });
  }

  start(entries: readonly CollectorEntry[]): void {
    for (const entry of entries) {
      if (!entry.enabled(this.config)) continue;
      const log = this.log.child({ collector: entry.name });
      const made = entry.create({ registry: this.registry, config: this.config, log });
      for (const collector of Array.isArray(made) ? made : [made]) this.run(collector, collector.labels ? log.child(collector.labels) : log, entry.interval(this.config));
    }
  }

  private run(collector: Collector, log: Logger, intervalSeconds: number): void {
    this.up.set(healthLabels(collector), 0);
    const state = { collector, timer: undefined as unknown as NodeJS.Timeout, abort: new AbortController(), busy: false, healthy: null as boolean | null };
    const intervalMs = Math.max(1, intervalSeconds * 1000);
    const tick = () => void this.runOnce(state, log, intervalMs);
    state.timer = setInterval(tick, intervalMs);
    state.timer.unref();
    this.running.push(state);
    tick();
  }

  private async runOnce(
    state: { collector: Collector; abort: AbortController; busy: boolean; healthy: boolean | null },
    log: Logger,
    intervalMs: number,
  ): Promise<void> {
    if (state.busy || state.abort.signal.aborted) return; // a slow source never piles up runs
    state.busy = true;
    const name = healthLabels(state.collector);
    const started = performance.now();
    const timeout = AbortSignal.timeout(intervalMs * 2);
    try {
      await state.collector.collect(AbortSignal.any([state.abort.signal, timeout]));
      this.up.set(name, 1);
      this.lastSuccess.set(name, Date.now() / 1000);
      if (state.healthy === false) log.info('collector recovered');
      state.healthy = true;
    } catch (err) {
      if (state.abort.signal.aborted) return;
      const kind = err instanceof CollectorError ? err.kind : timeout.aborted ? 'timeout' : 'error';
      this.up.set(name, 0);
      this.errors.inc({ ...name, kind });
      if (state.healthy !== false) log.warn({ err: errMessage(err), kind }, 'collector failed; will keep trying');
      state.healthy = false;
    } finally {
      this.duration.set(name, (performance.now() - started) / 1000);
      state.busy = false;
    }
  }

  async close(): Promise<void> {
    for (const s of this.running) {
      clearInterval(s.timer);
      s.abort.abort();
      await s.collector.close?.();
    }
    this.running.length = 0;
  }
}

function healthLabels(c: Collector): Record<string, string> {
  return c.labels ? { collector: c.name, ...c.labels } : { collector: c.name };
}

function errMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
