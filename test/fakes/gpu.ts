/** Helpers for tests that run the fake nvidia-smi as a real process. */
import { fileURLToPath } from 'node:url';
import { Writable } from 'node:stream';
import { spawn } from 'node:child_process';
import type { Registry } from 'prom-client';
import { createLogger } from '../../src/lib/log.js';
import { parsePrometheusText, type Sample } from '../../src/lib/prom-text.js';

/** From dist/test/fakes/: the repository root is three levels up. */
const root = new URL('../../../', import.meta.url);

export const FAKE_NVIDIA_SMI = fileURLToPath(new URL('bin/fake-nvidia-smi', root));

export function fixturePath(name: string): string {
  return fileURLToPath(new URL(`test/fixtures/${name}`, root));
}

export const DMON_FIXTURES = [
  'nvidia-smi-dmon-default-1gpu-rtx2080.txt',
  'nvidia-smi-dmon-s-mutc-o-TD-1gpu-2024.txt',
  'nvidia-smi-dmon-s-pucet-o-DT-1gpu-2021.txt',
  'nvidia-smi-dmon-s-pucm-1gpu-hotloop.txt',
  'nvidia-smi-dmon-s-pucv-jpg-ofa-testfixture.txt',
  'nvidia-smi-dmon-s-pucvmet-1gpu-older-driver.txt',
  'nvidia-smi-dmon-gpm-metrics-1-2-13-1gpu.txt',
];

/** A logger whose JSON lines are kept for assertions. */
export function capturedLogger(): { log: ReturnType<typeof createLogger>; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString().split('\n')) if (l.trim()) lines.push(JSON.parse(l) as Record<string, unknown>);
      cb();
    },
  });
  return { log: createLogger('debug', 'test', sink), lines };
}

export async function scrape(registry: Registry): Promise<Sample[]> {
  return parsePrometheusText(await registry.metrics()).samples;
}

export function series(samples: readonly Sample[], name: string): Sample[] {
  return samples.filter((s) => s.name === name);
}

/** Polls `check` (which may throw or return false) until it returns true or `ms` pass. */
export async function eventually(check: () => Promise<boolean> | boolean, ms = 8000, what = 'condition', everyMs = 25): Promise<void> {
  const end = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      if (await check()) return;
    } catch (err) {
      last = err;
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs the fake to completion (or until `killAfterMs`, then SIGTERM). */
export function runFake(args: string[], env: Record<string, string> = {}, killAfterMs?: number): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(FAKE_NVIDIA_SMI, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = killAfterMs === undefined ? undefined : setTimeout(() => child.kill('SIGTERM'), killAfterMs);
    child.once('error', reject);
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}
