/** Shared test plumbing: fixtures, a running infermeter, scraping its /metrics. */
import { readFileSync } from 'node:fs';
import { after, before } from 'node:test';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { request } from 'undici';
import { resolveConfig, type Config } from '../src/config.js';
import { startInfermeter } from '../src/daemon/main.js';
import type { Running } from '../src/daemon/start.js';
import { parsePrometheusText, sumSamples, type Sample } from '../src/lib/prom-text.js';
import { startFakeUpstream, type FakeEvent, type FakeUpstream } from './fakes/upstream.js';

/** Repo root, from dist/test/helpers.js. */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const FIXTURES = `${ROOT}test/fixtures/`;

export function fixture(name: string): Buffer {
  return readFileSync(FIXTURES + name);
}

export function testConfig(overrides: Record<string, string | boolean> = {}, env: NodeJS.ProcessEnv = {}): Config {
  return resolveConfig(
    { listen: '127.0.0.1:0', metricsListen: '127.0.0.1:0', logLevel: 'silent', collectorGpu: 'false', collectorEngine: 'false', collectorHost: 'false', ...overrides },
    env,
  );
}

export interface TestProxy extends Running {
  url: string;
  metricsUrl: string;
  config: Config;
}

export async function startProxy(overrides: Record<string, string | boolean> = {}): Promise<TestProxy> {
  const config = testConfig(overrides);
  const running = await startInfermeter(config, pino({ level: 'silent' }));
  return { ...running, config, url: `http://127.0.0.1:${running.proxyPort}`, metricsUrl: `http://127.0.0.1:${running.metricsPort}/metrics` };
}

export async function scrape(metricsUrl: string): Promise<{ text: string; samples: Sample[] }> {
  const res = await request(metricsUrl);
  const text = await res.body.text();
  return { text, samples: parsePrometheusText(text).samples };
}

/** Polls /metrics until `pred` holds (records reach the worker in batches). */
export async function waitForMetrics(metricsUrl: string, pred: (samples: Sample[]) => boolean, timeoutMs = 5000): Promise<Sample[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { samples } = await scrape(metricsUrl);
    if (pred(samples)) return samples;
    if (Date.now() > deadline) throw new Error('metrics condition not met in time');
    await new Promise((r) => setTimeout(r, 25));
  }
}

export { sumSamples };
/** A loopback port that was free a moment ago (for programs that need a number, not port 0). */
export { freePort } from '../bench/lib.js';

/** Starts a child process and resolves with the first line it prints (e.g. a port). */
export function spawnWithFirstLine(cmd: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ child: ChildProcess; line: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
    let buf = '';
    child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      const i = buf.indexOf('\n');
      if (i >= 0) resolve({ child, line: buf.slice(0, i) });
    });
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`${cmd} exited with ${code} before printing`)));
  });
}

/** The bucket count at `le` of a histogram with `labels`. */
export function bucket(samples: Sample[], name: string, le: string, labels: Record<string, string> = {}): number {
  return sumSamples(samples, `${name}_bucket`, { ...labels, le });
}

/** Reads a whole streamed response body as a Buffer. */
export async function rawPost(url: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; headers: Record<string, unknown>; body: Buffer }> {
  const res = await request(url, { method: 'POST', body: typeof body === 'string' ? body : JSON.stringify(body), headers: { 'content-type': 'application/json', ...headers } });
  const chunks: Buffer[] = [];
  for await (const c of res.body) chunks.push(c as Buffer);
  return { status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) };
}

/** POSTs `body` and keeps, for each read, the byte count held so far and when (from just before sending). */
export async function timedPost(url: string, body: unknown): Promise<{ status: number; body: Buffer; secondsWhenHeld(bytes: number): number }> {
  const t0 = performance.now();
  const res = await request(url, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
  const chunks: Buffer[] = [];
  const reads: { held: number; at: number }[] = [];
  let held = 0;
  for await (const c of res.body) {
    const at = (performance.now() - t0) / 1000;
    chunks.push(c as Buffer);
    held += (c as Buffer).length;
    reads.push({ held, at });
  }
  return {
    status: res.statusCode,
    body: Buffer.concat(chunks),
    secondsWhenHeld: (bytes) => {
      const r = reads.find((x) => x.held >= bytes);
      if (!r) throw new Error(`the client never held ${bytes} bytes`);
      return r.at;
    },
  };
}

/** A fake upstream and an infermeter in front of it, shared by every test of the file. */
export function proxyOverFakeUpstream(overrides: Record<string, string | boolean> = {}): { upstream: FakeUpstream; proxy: TestProxy } {
  const env = {} as { upstream: FakeUpstream; proxy: TestProxy };
  before(async () => {
    env.upstream = await startFakeUpstream();
    env.proxy = await startProxy({ upstream: env.upstream.url, ...overrides });
  });
  after(async () => {
    await env.proxy.close();
    await env.upstream.close();
  });
  return env;
}

/**
 * Streams a chat completion through `url` and aborts the moment `marker` has arrived.
 * Resolves to when the abort happened (performance.now()).
 */
export async function streamUntilThenAbort(url: string, body: unknown, marker: string, dispatcher?: import('undici').Dispatcher): Promise<number> {
  const ac = new AbortController();
  const res = await request(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal: ac.signal, dispatcher });
  let seen = '';
  let abortedAt = 0;
  try {
    for await (const c of res.body) {
      seen += (c as Buffer).toString();
      if (seen.includes(marker)) {
        abortedAt = performance.now();
        ac.abort();
      }
    }
  } catch {
    /* the abort */
  }
  return abortedAt;
}

/** The fake upstream's `index`-th event of `kind`, waited for up to `timeoutMs` (undefined if it never came). */
export async function upstreamEvent(upstream: FakeUpstream, kind: FakeEvent['kind'], index = 0, timeoutMs = 2000): Promise<FakeEvent | undefined> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const event = upstream.events.filter((e) => e.kind === kind)[index];
    if (event || Date.now() >= deadline) return event;
    await new Promise((r) => setTimeout(r, 5));
  }
}
