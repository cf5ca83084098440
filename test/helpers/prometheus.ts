/** A real Prometheus server (Debian's `prometheus`) on loopback, scraping given targets every second. */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { freePort } from '../helpers.js';
import { eventually } from '../fakes/gpu.js';
import { skipWithout } from './tools.js';

/** A skip reason outside CI; under CI a missing Prometheus fails the test (test/helpers/tools.ts). */
export const PROMETHEUS_MISSING = skipWithout(spawnSync('prometheus', ['--version']).status === 0, 'prometheus is not installed (Debian: apt-get install prometheus)');

export interface PromSample {
  metric: Record<string, string>;
  value: [number, string];
}

export interface RunningPrometheus {
  url: string;
  /** An instant query, now or at `at` (Unix seconds). */
  query(expr: string, at?: number): Promise<PromSample[]>;
  /** The single value of an instant query, NaN when empty. */
  scalar(expr: string, at?: number): Promise<number>;
  stop(): Promise<void>;
}

export async function startPrometheus(dir: string, targets: string[], flags: string[] = [], extraConfig: Record<string, unknown> = {}): Promise<RunningPrometheus> {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'prometheus.yml'), stringify({
    global: { scrape_interval: '1s', evaluation_interval: '1s' },
    scrape_configs: [{ job_name: 'infermeter', scrape_interval: '1s', scrape_timeout: '1s', static_configs: [{ targets }] }],
    ...extraConfig,
  }));
  const port = await freePort();
  const child: ChildProcess = spawn('prometheus', [
    `--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`,
    `--web.listen-address=127.0.0.1:${port}`, '--log.level=error', ...flags,
  ], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (b: Buffer) => (stderr += b.toString()));
  const url = `http://127.0.0.1:${port}`;
  await eventually(async () => (await fetch(`${url}/-/ready`)).ok, 10_000, `Prometheus ready (${stderr})`, 250);
  const query = async (expr: string, at?: number): Promise<PromSample[]> => {
    const res = await fetch(`${url}/api/v1/query?query=${encodeURIComponent(expr)}${at === undefined ? '' : `&time=${at}`}`);
    const body = (await res.json()) as { status: string; data: { result: PromSample[] }; error?: string };
    if (body.status !== 'success') throw new Error(`${expr}: ${body.error}`);
    return body.data.result;
  };
  return {
    url,
    query,
    scalar: async (expr, at) => {
      const r = await query(expr, at);
      return r.length === 1 ? Number(r[0]!.value[1]) : NaN;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
