/**
 * The one place that starts child processes. Callers get lines (long-running children such
 * as `nvidia-smi dmon`) or the whole output (one-shot commands), and one exit report that
 * never rejects: a missing binary is `error.code === 'ENOENT'`, not an exception.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

export interface ExitReport {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Set when the process could not be started (ENOENT, EACCES, ...). */
  error: NodeJS.ErrnoException | null;
  /** The last bytes it wrote to stderr, for the log. */
  stderrTail: string;
}

export interface LineChild {
  readonly pid: number | undefined;
  kill(signal?: NodeJS.Signals): void;
  /** Resolves once, after stdout is drained and the process is gone (or never started). */
  readonly exited: Promise<ExitReport>;
}

export interface SpawnOptions {
  env?: NodeJS.ProcessEnv;
}

const STDERR_TAIL = 512;

export function spawnLines(command: string, args: readonly string[], onLine: (line: string) => void, options: SpawnOptions = {}): LineChild {
  // Its own process group: a terminal's Ctrl-C (SIGINT to the whole foreground group) must not
  // kill it under us, which would read as a failure; infermeter stops its children itself, in
  // order, at shutdown. If infermeter itself dies, the child's next write hits a closed pipe.
  const child = spawn(command, [...args], { stdio: ['ignore', 'pipe', 'pipe'], env: options.env ?? process.env, detached: true });
  let stderrTail = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (d: string) => {
    stderrTail = (stderrTail + d).slice(-STDERR_TAIL);
  });
  const lines = createInterface({ input: child.stdout, crlfDelay: Infinity });
  lines.on('line', onLine);
  const exited = new Promise<ExitReport>((resolve) => {
    let spawnError: NodeJS.ErrnoException | null = null;
    child.once('error', (err: NodeJS.ErrnoException) => {
      spawnError = err;
      // 'close' still follows an 'error' from spawn; it alone resolves.
      if (child.pid === undefined) resolve({ code: null, signal: null, error: err, stderrTail });
    });
    child.once('close', (code, signal) => resolve({ code, signal, error: spawnError, stderrTail: stderrTail.trim() }));
  });
  return {
    get pid() {
      return child.pid;
    },
    kill(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    },
    exited,
  };
}

export interface RunResult extends ExitReport {
  stdout: string;
  timedOut: boolean;
}

/** Runs a command to completion (killed after timeoutMs), collecting stdout. Never rejects. */
export async function runCommand(command: string, args: readonly string[], timeoutMs: number, options: SpawnOptions = {}): Promise<RunResult> {
  const out: string[] = [];
  const child = spawnLines(command, args, (l) => out.push(l), options);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill('SIGKILL');
  }, timeoutMs);
  timer.unref();
  const report = await child.exited;
  clearTimeout(timer);
  return { ...report, stdout: out.join('\n'), timedOut };
}
