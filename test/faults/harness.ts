/**
 * Fault-suite plumbing: infermeter as its own process (so its RSS and open file descriptors
 * are its own), /proc readings, and the report row each scenario prints.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { ROOT, scrape, sumSamples } from '../helpers.js';

export interface Infermeter {
  child: ChildProcess;
  pid: number;
  url: string;
  metricsUrl: string;
  log: () => string;
  stop(): Promise<void>;
}

export async function startInfermeterProcess(upstream: string, extra: string[] = []): Promise<Infermeter> {
  const child = spawn(process.execPath, [`${ROOT}dist/src/cli.js`, '--upstream', upstream, '--listen', '127.0.0.1:0', '--metrics-listen', '127.0.0.1:0', '--no-collector.gpu', '--no-collector.engine', '--no-collector.host', ...extra], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const deadline = Date.now() + 10_000;
  let m: RegExpExecArray | null = null;
  while (!(m = /"proxy":"127\.0\.0\.1:(\d+)","metrics":"127\.0\.0\.1:(\d+)"/.exec(out))) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`infermeter did not start:\n${out}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return {
    child,
    pid: child.pid!,
    url: `http://127.0.0.1:${m[1]}`,
    metricsUrl: `http://127.0.0.1:${m[2]}/metrics`,
    log: () => out,
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

export function rss(pid: number): number {
  return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;
}

/** Open file descriptors: sockets included, so a leaked socket per aborted stream shows here. */
export function openFds(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}

export async function totalRequests(metricsUrl: string, deadlineMs = 5000, expect?: number): Promise<number> {
  const end = Date.now() + deadlineMs;
  for (;;) {
    const n = sumSamples((await scrape(metricsUrl)).samples, 'infermeter_requests_total');
    if (expect === undefined || n === expect || Date.now() > end) return n;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Waits until the process's descriptor count settles back to at most `target`. */
export async function fdsSettle(pid: number, target: number, timeoutMs = 5000): Promise<number> {
  const end = Date.now() + timeoutMs;
  let n = openFds(pid);
  while (n > target && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 100));
    n = openFds(pid);
  }
  return n;
}

export interface Row {
  scenario: string;
  requests: number;
  bytesCompared: number;
  anomalies: number;
  peakRssMiB: number;
  fdsBefore: number;
  fdsAfter: number;
}

/** One line the report script (npm run test:faults) collects into its table. */
export function report(row: Row): void {
  console.log(`FAULT-ROW ${JSON.stringify(row)}`);
}
