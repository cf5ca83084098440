/**
 * The GPU collector: one long-lived `nvidia-smi dmon` child (dmon-child.ts) whose latest
 * sample per GPU is published on each collect(), plus static facts from `--query-gpu` once
 * (retried while they are missing). collect() only copies numbers already parsed; it never
 * waits on nvidia-smi beyond the first sample, and throws nothing but CollectorError.
 */
import type { Logger } from 'pino';
import { Counter, type Registry } from 'prom-client';
import { runCommand } from '../../lib/spawn.js';
import { CollectorError, type Collector } from '../types.js';
import { GPU_DMON_INVALID_LINES_METRIC, GPU_DMON_RESTARTS_METRIC, GPU_METRICS, QUERY_FIELDS } from './columns.js';
import { DmonChild, type RestartReason } from './dmon-child.js';
import type { DmonSample } from './dmon.js';
import { parseGpuFacts, type GpuFacts } from './query.js';
import { GpuSeries } from './series.js';
import type { ExitReport } from '../../lib/spawn.js';

export interface GpuCollectorOptions {
  binary: string;
  /** dmon -s letters. */
  columns: string;
  /** dmon -d, whole seconds. */
  intervalSeconds: number;
  /** Expected time between samples (default intervalSeconds); tests shorten it with a fake. */
  sampleMs?: number;
  /** Intervals without a sample before the child is killed and restarted (default 5). */
  stallIntervals?: number;
  /** Before a child's first sample it gets at least this long (default 15 s). */
  startupGraceMs?: number;
  /** Intervals without a sample before a GPU's series are removed (default 3). */
  staleIntervals?: number;
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  backoffResetMs?: number;
  /** How often missing static facts are asked for again. */
  factsRetryMs?: number;
  env?: NodeJS.ProcessEnv;
}

interface Latest {
  sample: DmonSample;
  at: number;
}

export class GpuCollector implements Collector {
  readonly name = 'gpu';
  private readonly child: DmonChild;
  private readonly series: GpuSeries;
  private readonly restarts: Counter;
  private readonly invalidLines: Counter;
  private readonly latest = new Map<number, Latest>();
  private readonly sampleMs: number;
  private readonly staleMs: number;
  private readonly factsRetryMs: number;
  private facts: Map<number, GpuFacts> | null = null;
  /** dmon reported a GPU the facts do not list: ask again (keeping the old facts meanwhile). */
  private factsOutdated = false;
  private factsAskedAt = -Infinity;
  private factsPending = false;
  private started = false;

  constructor(
    private readonly options: GpuCollectorOptions,
    registry: Registry,
    private readonly log: Logger,
  ) {
    this.sampleMs = options.sampleMs ?? options.intervalSeconds * 1000;
    this.staleMs = this.sampleMs * (options.staleIntervals ?? 3);
    this.factsRetryMs = options.factsRetryMs ?? 30_000;
    this.series = new GpuSeries(registry);
    const counter = (name: string) => {
      const d = GPU_METRICS.find((m) => m.name === name)!;
      return new Counter({ name: d.name, help: d.help, labelNames: [...d.labels], registers: [registry] });
    };
    this.restarts = counter(GPU_DMON_RESTARTS_METRIC);
    this.invalidLines = counter(GPU_DMON_INVALID_LINES_METRIC);
    this.child = new DmonChild(
      {
        binary: options.binary,
        args: ['dmon', '-s', options.columns, '-o', 'T', '-d', String(options.intervalSeconds)],
        sampleMs: this.sampleMs,
        stallAfterMs: this.sampleMs * (options.stallIntervals ?? 5),
        startupGraceMs: options.startupGraceMs ?? 15_000,
        backoffBaseMs: options.backoffBaseMs ?? 1000,
        backoffMaxMs: options.backoffMaxMs ?? 30_000,
        backoffResetMs: options.backoffResetMs ?? 60_000,
        env: options.env,
      },
      {
        sample: (s) => this.onSample(s),
        invalidLine: () => this.invalidLines.inc(),
        unknownColumn: (c) => this.log.warn({ column: c }, 'nvidia-smi dmon column not in the mapping table; skipped'),
        restart: (reason, delayMs, exit) => this.onRestart(reason, delayMs, exit),
      },
    );
  }

  async collect(signal: AbortSignal): Promise<void> {
    try {
      await this.collectOnce(signal);
    } catch (err) {
      if (err instanceof CollectorError) throw err;
      throw new CollectorError('internal', `gpu collector: ${(err as Error)?.message ?? String(err)}`, { cause: err });
    }
  }

  private async collectOnce(signal: AbortSignal): Promise<void> {
    if (!this.started) {
      this.started = true;
      this.askFactsIfMissing();
      this.child.start();
      await this.waitForFirstSample(signal);
    }
    this.askFactsIfMissing();
    const now = performance.now();
    for (const [gpu, l] of this.latest) {
      if (now - l.at > this.staleMs) {
        this.latest.delete(gpu);
        this.series.remove(gpu);
      } else {
        this.series.publish(l.sample, this.facts?.get(gpu));
      }
    }
    if (this.latest.size > 0) return;
    if (this.child.notFound) throw new CollectorError('not_found', `${this.options.binary}: not found (is the NVIDIA driver installed? see --nvidia-smi)`);
    if (this.child.status !== 'running') throw new CollectorError('down', `nvidia-smi dmon is not running (${describeExit(this.child.lastExit)})`);
    if (!this.child.sampledSinceStart) throw new CollectorError('starting', 'nvidia-smi dmon has not printed a sample yet');
    throw new CollectorError('stale', `no sample from nvidia-smi dmon in the last ${Math.round(this.staleMs)} ms`);
  }

  /**
   * At start only: lets the first run see the first sample (and the facts, so that series
   * are not first published without their uuid) instead of failing on an empty table.
   */
  private async waitForFirstSample(signal: AbortSignal): Promise<void> {
    const deadline = performance.now() + Math.min(5000, this.sampleMs * 1.5);
    const waiting = () => (this.latest.size === 0 && this.child.status === 'running') || this.factsPending;
    while (waiting() && !signal.aborted && performance.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  private onSample(sample: DmonSample): void {
    this.latest.set(sample.gpu, { sample, at: performance.now() });
    if (this.facts && !this.facts.has(sample.gpu)) this.factsOutdated = true;
  }

  private onRestart(reason: RestartReason, delayMs: number, exit: ExitReport): void {
    this.restarts.inc({ reason });
    if (exit.error?.code === 'ENOENT') return; // the runner logs the collector going down, once
    this.log.warn({ reason, delayMs, exit: describeExit(exit) }, 'nvidia-smi dmon ended; restarting after backoff');
  }

  private askFactsIfMissing(): void {
    if ((this.facts && !this.factsOutdated) || this.factsPending || performance.now() - this.factsAskedAt < this.factsRetryMs) return;
    this.factsPending = true;
    this.factsAskedAt = performance.now();
    const args = [`--query-gpu=${QUERY_FIELDS.join(',')}`, '--format=csv,noheader,nounits'];
    void runCommand(this.options.binary, args, 10_000, { env: this.options.env }).then((r) => {
      this.factsPending = false;
      const parsed = parseGpuFacts(r.stdout);
      if (r.code !== 0 || parsed.error || parsed.facts.length === 0) {
        if (!r.error) this.log.warn({ exit: describeExit(r), error: parsed.error }, 'nvidia-smi --query-gpu failed; GPU info will be retried');
        return;
      }
      this.facts = new Map(parsed.facts.map((f) => [f.index, f]));
      this.factsOutdated = false;
    });
  }

  /** Test and diagnostics view of the child. */
  get dmon(): DmonChild {
    return this.child;
  }

  async close(): Promise<void> {
    await this.child.stop();
  }
}

function describeExit(exit: ExitReport | null): string {
  if (!exit) return 'not started';
  if (exit.error) return `${exit.error.code ?? 'error'}: ${exit.error.message}`;
  const how = exit.signal ? `killed by ${exit.signal}` : `exit code ${exit.code}`;
  return exit.stderrTail ? `${how}: ${exit.stderrTail.split('\n').pop()}` : how;
}
