/**
 * Runs the built infermeter CLI as a real child process (its own metrics worker, its own
 * stdout), and reads its JSON log lines: the ports come from the "infermeter ready" line.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const CLI = fileURLToPath(new URL('../../src/cli.js', import.meta.url));

export interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

export class InfermeterProcess {
  readonly logs: LogLine[] = [];
  stderr = '';
  proxyUrl = '';
  metricsUrl = '';
  private child: ChildProcess | null = null;

  constructor(
    private readonly args: string[],
    private readonly env: Record<string, string>,
  ) {}

  /** Starts it on loopback with ephemeral ports and no collectors (tests add their own args). */
  static forUpstream(upstream: string, extraArgs: string[], env: Record<string, string>): InfermeterProcess {
    return new InfermeterProcess(
      ['--upstream', upstream, '--listen', '127.0.0.1:0', '--metrics-listen', '127.0.0.1:0',
        '--no-collector.gpu', '--no-collector.engine', '--no-collector.host', ...extraArgs],
      env,
    );
  }

  start(timeoutMs = 15_000): Promise<void> {
    const env: NodeJS.ProcessEnv = { PATH: process.env['PATH'], HOME: process.env['HOME'], ...this.env };
    const child = spawn(process.execPath, [CLI, ...this.args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    let buffered = '';
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`infermeter did not get ready in ${timeoutMs} ms; stderr: ${this.stderr}`)), timeoutMs);
      child.stderr!.on('data', (d: Buffer) => (this.stderr += d.toString('utf8')));
      child.stdout!.on('data', (d: Buffer) => {
        buffered += d.toString('utf8');
        let nl: number;
        while ((nl = buffered.indexOf('\n')) >= 0) {
          const line = buffered.slice(0, nl);
          buffered = buffered.slice(nl + 1);
          let parsed: LogLine;
          try {
            parsed = JSON.parse(line) as LogLine;
          } catch {
            continue;
          }
          this.logs.push(parsed);
          if (parsed.msg === 'infermeter ready') {
            this.proxyUrl = `http://${String(parsed['proxy'])}`;
            this.metricsUrl = `http://${String(parsed['metrics'])}`;
            clearTimeout(timer);
            resolve();
          }
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`infermeter exited with ${code} before it was ready; stderr: ${this.stderr}`));
      });
    });
  }

  get pid(): number {
    return this.child!.pid!;
  }

  /** Sends a signal (SIGHUP, SIGUSR2, ...) to the process. */
  signal(sig: NodeJS.Signals): void {
    this.child!.kill(sig);
  }

  /** Resolves with the exit code (or the signal's name) once the process is gone. */
  exited(): Promise<number | string | null> {
    const child = this.child!;
    if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode ?? child.signalCode);
    return new Promise((resolve) => child.once('exit', (code, sig) => resolve(code ?? sig)));
  }

  logsMatching(msg: string): LogLine[] {
    return this.logs.filter((l) => l.msg === msg);
  }

  /** SIGTERM, then waits for the exit (SIGKILL after `graceMs`). */
  async stop(graceMs = 8_000): Promise<number | null> {
    const child = this.child;
    if (!child || child.exitCode !== null) return child?.exitCode ?? null;
    return new Promise((resolve) => {
      const t = setTimeout(() => child.kill('SIGKILL'), graceMs);
      child.once('exit', (code) => {
        clearTimeout(t);
        resolve(code);
      });
      child.kill('SIGTERM');
    });
  }
}
