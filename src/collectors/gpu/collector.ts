/**
 * The GPU collector: long-lived `nvidia-smi dmon` children (dmon-child.ts; one per group
 * of 16 GPUs) whose latest sample per GPU is published on each collect(), plus static
 * facts from `--query-gpu` (retried while they are missing). Before the first child starts,
 * `dmon -h` says whether the driver offers GPM; gpm.ts decides from what dmon then prints
 * whether GPM works, and dmon runs again without it when it does not. collect() only
 * copies numbers already parsed; it never waits on nvidia-smi beyond the first sample, and
 * throws nothing but CollectorError. GPM being unavailable is never a collector failure.
 */
import type { Logger } from 'pino';
import { Counter, type Registry } from 'prom-client';
import { runCommand, type ExitReport } from '../../lib/spawn.js';
import { CollectorError, type Collector } from '../types.js';
import { GPU_DMON_INVALID_LINES_METRIC, GPU_DMON_RESTARTS_METRIC, GPU_METRICS, QUERY_FIELDS } from './columns.js';
import { DmonChild, type RestartReason } from './dmon-child.js';
import type { DmonSample } from './dmon.js';
import { GpmProbe, type GpmReason } from './gpm.js';
import { SHOW_ALL_DEVICES_ENV, dmonCommands, gpmIdsFor, parseDmonHelp, type DmonHelp } from './plan.js';
import { parseGpuFacts, type GpuFacts } from './query.js';
import { GpuSeries } from './series.js';
import { GpuSourceInfo } from './source-info.js';
import type { MachineSnapshot } from '../snapshot.js';

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
  /** Ask for GPM when the driver offers it (default true). */
  gpm?: boolean;
  env?: NodeJS.ProcessEnv;
}

interface Latest {
  sample: DmonSample;
  /** performance.now() at arrival, for staleness. */
  at: number;
  /** Unix ms at arrival, for the machine snapshot. */
  readAt: number;
}

/** How long the start waits for `dmon -h` and the facts before starting dmon without them. */
const PROBE_MS = 5000;
/** Reasons the runner already explains (the collector is down, or GPM was switched off): no GPM log line of their own. */
const QUIET_GPM_REASONS = new Set<GpmReason>(['not_found', 'help_failed', 'disabled']);

export class GpuCollector implements Collector {
  readonly name = 'gpu';
  private children: DmonChild[] = [];
  private commands: string[][] = [];
  private readonly series: GpuSeries;
  private readonly sourceInfo: GpuSourceInfo;
  private readonly restarts: Counter;
  private readonly invalidLines: Counter;
  private readonly latest = new Map<number, Latest>();
  private readonly sampleMs: number;
  private readonly staleMs: number;
  private readonly factsRetryMs: number;
  private readonly env: NodeJS.ProcessEnv;
  private readonly noticed = new Set<string>();
  private help: DmonHelp | null = null;
  private gpm = new GpmProbe(false);
  private facts: Map<number, GpuFacts> | null = null;
  /** dmon reported a GPU the facts do not list: ask again (keeping the old facts meanwhile). */
  private factsOutdated = false;
  private factsAskedAt = -Infinity;
  private factsPending: Promise<void> | null = null;
  private startup: Promise<void> | null = null;
  /** Set once `dmon -h` has been read: from then on the children follow the plan. */
  private planned = false;
  private closed = false;

  constructor(
    private readonly options: GpuCollectorOptions,
    registry: Registry,
    private readonly log: Logger,
    machine?: MachineSnapshot,
  ) {
    this.sampleMs = options.sampleMs ?? options.intervalSeconds * 1000;
    this.staleMs = this.sampleMs * (options.staleIntervals ?? 3);
    this.factsRetryMs = options.factsRetryMs ?? 30_000;
    this.env = { ...(options.env ?? process.env), ...SHOW_ALL_DEVICES_ENV };
    this.series = new GpuSeries(registry, machine);
    this.sourceInfo = new GpuSourceInfo(registry, 'nvidia-smi');
    const counter = (name: string) => {
      const d = GPU_METRICS.find((m) => m.name === name)!;
      return new Counter({ name: d.name, help: d.help, labelNames: [...d.labels], registers: [registry] });
    };
    this.restarts = counter(GPU_DMON_RESTARTS_METRIC);
    this.invalidLines = counter(GPU_DMON_INVALID_LINES_METRIC);
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
    if (!this.startup) {
      this.startup = this.start();
      await this.waitForFirstSample(signal);
    }
    this.askFactsIfMissing();
    const now = performance.now();
    for (const [gpu, l] of this.latest) {
      if (now - l.at > this.staleMs) {
        this.latest.delete(gpu);
        this.series.remove(gpu);
      } else {
        this.series.publish(l.sample, this.facts?.get(gpu), l.readAt);
      }
    }
    if (this.latest.size > 0) return;
    const kids = this.children;
    if (kids.length === 0) throw new CollectorError('starting', 'asking nvidia-smi what it supports before starting dmon');
    if (kids.some((c) => c.notFound)) throw new CollectorError('not_found', `${this.options.binary}: not found (is the NVIDIA driver installed? see --nvidia-smi)`);
    if (!kids.some((c) => c.status === 'running')) throw new CollectorError('down', `nvidia-smi dmon is not running (${describeExit(kids[0]!.lastExit)})`);
    if (!kids.some((c) => c.sampledSinceStart)) throw new CollectorError('starting', 'nvidia-smi dmon has not printed a sample yet');
    throw new CollectorError('stale', `no sample from nvidia-smi dmon in the last ${Math.round(this.staleMs)} ms`);
  }

  /** `dmon -h` and the facts (bounded), then the dmon children. */
  private async start(): Promise<void> {
    const wantGpm = this.options.gpm ?? true;
    const help = wantGpm ? runCommand(this.options.binary, ['dmon', '-h'], PROBE_MS, { env: this.env }) : null;
    const facts = this.askFactsIfMissing() ?? Promise.resolve();
    await within(facts, PROBE_MS);
    const h = help ? await help : null;
    if (h && !h.error && !h.timedOut) this.help = parseDmonHelp(h.stdout);
    const ids = this.help ? gpmIdsFor(this.help) : [];
    const missing = h?.error?.code === 'ENOENT';
    this.gpm = new GpmProbe(ids.length > 0, !wantGpm ? 'disabled' : this.help ? 'not_in_help' : missing ? 'not_found' : 'help_failed');
    this.noteGpm();
    this.planned = true;
    this.replan();
  }

  /**
   * At start only: lets the first run see the first sample (and the facts, so that series
   * are not first published without their uuid) instead of failing on an empty table.
   */
  private async waitForFirstSample(signal: AbortSignal): Promise<void> {
    const deadline = performance.now() + Math.min(5000, this.sampleMs * 1.5);
    const waiting = () => this.children.length === 0 || (this.latest.size === 0 && this.children.some((c) => c.status === 'running')) || this.factsPending !== null;
    while (waiting() && !signal.aborted && performance.now() < deadline) {
      await sleep(20);
    }
  }

  /** (Re)starts the dmon children when the commands they should run changed. */
  private replan(): void {
    if (this.closed || !this.planned) return;
    const commands = dmonCommands({
      columns: this.options.columns, intervalSeconds: this.options.intervalSeconds,
      gpuCount: this.facts ? this.facts.size : null,
      gpmIds: this.gpm.status === 'unavailable' || !this.help ? [] : gpmIdsFor(this.help),
      gpmOptions: this.help?.gpmOptions ?? false,
    });
    if (JSON.stringify(commands) === JSON.stringify(this.commands)) return;
    this.commands = commands;
    const old = this.children;
    this.children = commands.map((args) => this.child(args));
    void Promise.all(old.map((c) => c.stop())).then(() => {
      if (!this.closed) for (const c of this.children) c.start();
    });
  }

  private child(args: string[]): DmonChild {
    const child: DmonChild = new DmonChild(
      {
        binary: this.options.binary,
        args,
        sampleMs: this.sampleMs,
        stallAfterMs: this.sampleMs * (this.options.stallIntervals ?? 5),
        startupGraceMs: this.options.startupGraceMs ?? 15_000,
        backoffBaseMs: this.options.backoffBaseMs ?? 1000,
        backoffMaxMs: this.options.backoffMaxMs ?? 30_000,
        backoffResetMs: this.options.backoffResetMs ?? 60_000,
        env: this.env,
      },
      {
        sample: (s) => this.onSample(s),
        invalidLine: () => this.invalidLines.inc(),
        unknownColumn: (c) => this.once(`column ${c}`, () => this.log.warn({ column: c }, 'nvidia-smi dmon column not in the mapping table; skipped')),
        warning: (text) => this.once(text, () => this.log.info({ nvidiaSmi: text }, 'nvidia-smi dmon printed a warning (NVSMI_SHOW_ALL_DEVICES=1 is set for it)')),
        restart: (reason, delayMs, exit) => this.onRestart(child, reason, delayMs, exit),
      },
    );
    return child;
  }

  private onSample(sample: DmonSample): void {
    this.latest.set(sample.gpu, { sample, at: performance.now(), readAt: Date.now() });
    if (this.facts && !this.facts.has(sample.gpu)) this.factsOutdated = true;
    const before = this.gpm.status;
    const unavailable = this.gpm.sample(sample);
    if (this.gpm.status === before) return;
    this.noteGpm();
    if (unavailable) this.replan();
  }

  private onRestart(child: DmonChild, reason: RestartReason, delayMs: number, exit: ExitReport): void {
    this.restarts.inc({ reason });
    if (exit.error?.code === 'ENOENT') return; // the runner logs the collector going down, once
    if (!child.sampledSinceStart && this.gpm.exitedBeforeSample(exit.code)) {
      this.noteGpm(describeExit(exit));
      this.replan();
      return;
    }
    this.log.warn({ reason, delayMs, exit: describeExit(exit) }, 'nvidia-smi dmon ended; restarting after backoff');
  }

  /** Publishes the GPM state; logs once when GPM turns out unavailable. True when it changed. */
  private noteGpm(detail?: string): boolean {
    const changed = this.sourceInfo.set(this.gpm.status, this.gpm.reason);
    if (changed && this.gpm.status === 'unavailable' && !QUIET_GPM_REASONS.has(this.gpm.reason)) {
      this.log.info({ reason: this.gpm.reason, ...(detail ? { exit: detail } : {}) },
        'GPU Performance Monitoring (SM occupancy, DRAM bandwidth, tensor activity) is not available here; nvidia-smi dmon runs without --gpm-metrics');
    }
    return changed;
  }

  private once(key: string, act: () => void): void {
    if (this.noticed.has(key)) return;
    this.noticed.add(key);
    act();
  }

  /** Asks for the static facts when they are missing or outdated; returns the pending query, if one was started. */
  private askFactsIfMissing(): Promise<void> | null {
    if ((this.facts && !this.factsOutdated) || this.factsPending || performance.now() - this.factsAskedAt < this.factsRetryMs) return null;
    this.factsAskedAt = performance.now();
    const args = [`--query-gpu=${QUERY_FIELDS.join(',')}`, '--format=csv,noheader,nounits'];
    this.factsPending = runCommand(this.options.binary, args, 10_000, { env: this.env }).then((r) => {
      this.factsPending = null;
      const parsed = parseGpuFacts(r.stdout);
      if (r.code !== 0 || parsed.error || parsed.facts.length === 0) {
        if (!r.error) this.log.warn({ exit: describeExit(r), error: parsed.error }, 'nvidia-smi --query-gpu failed; GPU info will be retried');
        return;
      }
      this.facts = new Map(parsed.facts.map((f) => [f.index, f]));
      this.factsOutdated = false;
      this.replan(); // more than 16 GPUs: one dmon per group
    });
    return this.factsPending;
  }

  /** Test and diagnostics view: the argument lists of the dmon children. */
  get dmonCommands(): readonly string[][] {
    return this.commands;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.startup?.catch(() => undefined);
    await Promise.all(this.children.map((c) => c.stop()));
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Waits for `p`, or `ms` at most. */
async function within(p: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([p, new Promise<void>((r) => (timer = setTimeout(r, ms)))]);
  clearTimeout(timer);
}

function describeExit(exit: ExitReport | null): string {
  if (!exit) return 'not started';
  if (exit.error) return `${exit.error.code ?? 'error'}: ${exit.error.message}`;
  const how = exit.signal ? `killed by ${exit.signal}` : `exit code ${exit.code}`;
  return exit.stderrTail ? `${how}: ${exit.stderrTail.split('\n').pop()}` : how;
}
