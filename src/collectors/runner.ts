import { Counter, Gauge, type Registry } from 'prom-client';
import type { Logger } from 'pino';
import { COLLECTOR_HEALTH_METRICS } from './health-metrics.js';
import { CollectorError, type Collector, type CollectorEntry, type CollectorOptions } from './types.js';
import { MachineSnapshot } from './snapshot.js';

const [UP, LAST_SUCCESS, DURATION, ERRORS] = COLLECTOR_HEALTH_METRICS;
/** Runs a collector may spend `starting` after its start before that is logged as a failure. */
export const STARTING_RUNS = 3;

/**
 * Runs each enabled collector on its own interval, times it, and reports its health.
 * A failing collector sets up=0 and logs once per transition; it never throws out of here.
 * It owns the machine snapshot the collectors publish into (snapshot.ts), health included.
 */
export class CollectorRunner {
  /** What the collectors last read: hand it to whoever reads machine state. */
  readonly machine = new MachineSnapshot();
  private readonly up: Gauge;
  private readonly lastSuccess: Gauge;
  private readonly duration: Gauge;
  private readonly errors: Counter;
  private readonly running: (RunState & { timer: NodeJS.Timeout })[] = [];

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
      const made = entry.create({ registry: this.registry, config: this.config, log, machine: this.machine });
      for (const collector of Array.isArray(made) ? made : [made]) this.run(collector, collector.labels ? log.child(collector.labels) : log, entry.interval(this.config));
    }
  }

  private run(collector: Collector, log: Logger, intervalSeconds: number): void {
    this.up.set(healthLabels(collector), 0);
    const state: RunState & { timer: NodeJS.Timeout } = {
      collector, timer: undefined as unknown as NodeJS.Timeout, abort: new AbortController(), busy: false, healthy: null, startingRuns: 0, up: false, lastSuccessAt: null, durationSeconds: null,
    };
    this.publishHealth(state);
    const intervalMs = Math.max(1, intervalSeconds * 1000);
    const tick = () => void this.runOnce(state, log, intervalMs);
    state.timer = setInterval(tick, intervalMs);
    state.timer.unref();
    this.running.push(state);
    tick();
  }

  private async runOnce(
    state: RunState,
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
      state.up = true;
      state.lastSuccessAt = Date.now();
      this.up.set(name, 1);
      this.lastSuccess.set(name, state.lastSuccessAt / 1000);
      if (state.healthy === false) log.info('collector recovered');
      state.healthy = true;
    } catch (err) {
      if (state.abort.signal.aborted) return;
      const kind = err instanceof CollectorError ? err.kind : timeout.aborted ? 'timeout' : 'error';
      state.up = false;
      this.up.set(name, 0);
      this.errors.inc({ ...name, kind });
      // A collector still starting (its source has not answered yet: dmon's first sample) is not a failure for its first runs.
      if (kind === 'starting' && state.healthy === null && ++state.startingRuns < STARTING_RUNS) {
        log.debug({ err: errMessage(err) }, 'collector starting');
        return;
      }
      if (state.healthy !== false) log.warn({ err: errMessage(err), kind }, 'collector failed; will keep trying');
      state.healthy = false;
    } finally {
      state.durationSeconds = (performance.now() - started) / 1000;
      this.duration.set(name, state.durationSeconds);
      this.publishHealth(state);
      state.busy = false;
    }
  }

  /** The health part of the snapshot: the same figures as the gauges above. */
  private publishHealth(s: RunState): void {
    const c = s.collector;
    this.machine.setHealth({ collector: c.name, upstream: c.labels?.['upstream'] ?? null, up: s.up, lastSuccessAt: s.lastSuccessAt, durationSeconds: s.durationSeconds, at: Date.now() });
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

interface RunState {
  collector: Collector;
  abort: AbortController;
  busy: boolean;
  /** For the log: null until the first run ended (runs that ended `starting` at start aside). */
  healthy: boolean | null;
  /** Runs that ended `starting` since the start. */
  startingRuns: number;
  /** As infermeter_collector_up, _last_success_timestamp_seconds (here in Unix ms) and _duration_seconds hold them. */
  up: boolean;
  lastSuccessAt: number | null;
  durationSeconds: number | null;
}

function healthLabels(c: Collector): Record<string, string> {
  return c.labels ? { collector: c.name, ...c.labels } : { collector: c.name };
}

function errMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
