/**
 * Keeps one `nvidia-smi dmon` child alive: spawns it, feeds its lines to the parser,
 * kills it when it stops producing samples (a hung nvidia-smi — a stuck driver call — can
 * sit forever without printing or exiting), and restarts it with exponential backoff.
 */
import { spawnLines, type ExitReport, type LineChild } from '../../lib/spawn.js';
import { DmonParser, type DmonSample } from './dmon.js';

const ABANDON_AFTER_MS = 5000;

export type RestartReason = 'exited' | 'stalled' | 'spawn_failed';

export interface DmonChildOptions {
  binary: string;
  args: readonly string[];
  /** Expected time between samples. */
  sampleMs: number;
  /** No sample for this long: the child is killed and restarted. */
  stallAfterMs: number;
  /**
   * Before a child's first sample the wait is at least this long: without persistence mode
   * nvidia-smi can take seconds to initialise the driver on a many-GPU machine.
   */
  startupGraceMs: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  /** A child that has produced samples for this long resets the backoff. */
  backoffResetMs: number;
  env?: NodeJS.ProcessEnv;
}

export interface DmonChildEvents {
  sample(sample: DmonSample): void;
  invalidLine(reason: string): void;
  unknownColumn(column: string): void;
  /** A driver notice (e.g. the 535 series' 4-GPU warning), not garbage. */
  warning?(text: string): void;
  /** The child ended (or was killed) and will be started again after delayMs. */
  restart(reason: RestartReason, delayMs: number, exit: ExitReport): void;
}

export type ChildState = 'idle' | 'running' | 'waiting' | 'stopped';

export class DmonChild {
  private child: LineChild | null = null;
  private state: ChildState = 'idle';
  private failures = 0;
  private startedAt = 0;
  private lastSampleAt = 0;
  private sampled = false;
  private restartTimer: NodeJS.Timeout | null = null;
  private watchdog: NodeJS.Timeout | null = null;
  private killedForStall = false;
  /** The last way a child ended; null while none has. */
  lastExit: ExitReport | null = null;
  readonly parser: DmonParser;

  constructor(
    private readonly options: DmonChildOptions,
    private readonly events: DmonChildEvents,
  ) {
    this.parser = new DmonParser((c) => events.unknownColumn(c));
  }

  get status(): ChildState {
    return this.state;
  }

  /** True once the current child has printed a sample. */
  get sampledSinceStart(): boolean {
    return this.sampled;
  }

  /** True when the last start failed because the binary does not exist. */
  get notFound(): boolean {
    return this.lastExit?.error?.code === 'ENOENT';
  }

  start(): void {
    if (this.state === 'running' || this.state === 'stopped') return;
    this.state = 'running';
    this.startedAt = this.lastSampleAt = performance.now();
    this.killedForStall = false;
    this.sampled = false;
    const child = spawnLines(this.options.binary, this.options.args, (line) => this.onLine(line), { env: this.options.env });
    this.child = child;
    this.watchdog = setInterval(() => this.checkStall(), Math.max(10, Math.min(this.options.sampleMs, this.options.stallAfterMs / 2)));
    this.watchdog.unref();
    void child.exited.then((exit) => this.onExit(child, exit));
  }

  private onLine(line: string): void {
    const ev = this.parser.line(line);
    if (ev.kind === 'sample') {
      const now = performance.now();
      this.lastSampleAt = now;
      this.sampled = true;
      if (now - this.startedAt >= this.options.backoffResetMs) this.failures = 0;
      this.events.sample(ev.sample);
    } else if (ev.kind === 'invalid') {
      this.events.invalidLine(ev.reason);
    } else if (ev.kind === 'warning') {
      this.events.warning?.(ev.text);
    }
  }

  private checkStall(): void {
    if (this.state !== 'running' || !this.child) return;
    const allowed = this.sampled ? this.options.stallAfterMs : Math.max(this.options.stallAfterMs, this.options.startupGraceMs);
    if (performance.now() - this.lastSampleAt < allowed) return;
    this.killedForStall = true;
    const child = this.child;
    child.kill('SIGKILL');
    // A process stuck in the driver (uninterruptible sleep) survives even SIGKILL: give up
    // on it rather than wait forever, so that a fresh child can be tried.
    const abandon = setTimeout(() => this.onExit(child, { code: null, signal: null, error: null, stderrTail: 'did not exit after SIGKILL' }), ABANDON_AFTER_MS);
    abandon.unref();
    void child.exited.then(() => clearTimeout(abandon));
  }

  private onExit(child: LineChild, exit: ExitReport): void {
    if (this.child !== child) return;
    this.child = null;
    this.clearWatchdog();
    this.lastExit = exit;
    if (this.state === 'stopped') return;
    const reason: RestartReason = exit.error ? 'spawn_failed' : this.killedForStall ? 'stalled' : 'exited';
    const delay = Math.min(this.options.backoffMaxMs, this.options.backoffBaseMs * 2 ** this.failures);
    this.failures++;
    this.state = 'waiting';
    this.restartTimer = setTimeout(() => {
      this.restartTimer = null;
      if (this.state === 'waiting') {
        this.state = 'idle';
        this.start();
      }
    }, delay);
    this.restartTimer.unref();
    this.events.restart(reason, delay, exit);
  }

  private clearWatchdog(): void {
    if (this.watchdog) clearInterval(this.watchdog);
    this.watchdog = null;
  }

  /** Stops for good: SIGTERM, then SIGKILL if the child is still there after graceMs. */
  async stop(graceMs = 2000): Promise<void> {
    this.state = 'stopped';
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.clearWatchdog();
    const child = this.child;
    if (!child) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    timer.unref();
    let giveUp: NodeJS.Timeout | undefined;
    // Shutdown must not hang on a child that not even SIGKILL ends (stuck in the driver).
    await Promise.race([child.exited, new Promise<void>((r) => (giveUp = setTimeout(r, graceMs + ABANDON_AFTER_MS)))]);
    clearTimeout(timer);
    clearTimeout(giveUp);
  }
}
