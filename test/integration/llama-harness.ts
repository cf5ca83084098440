/**
 * Shared setup for the real-engine tests: find the llama-server binary and the tiny model
 * that `npm run engine:llama` built, start llama-server on a free loopback port, and start
 * infermeter (--engine llamacpp) in front of it.
 *
 * Where the engine is: INFERMETER_LLAMA_SERVER and INFERMETER_LLAMA_MODEL, else the manifest
 * `current.json` that engine:llama writes in its cache. When neither is there the tests FAIL
 * under CI (CI set and not false/0: CI must build the engine), and are skipped with the
 * reason printed elsewhere.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { resolveConfig } from '../../src/config.js';
import { createLogger } from '../../src/lib/log.js';
import { parsePrometheusText, sumSamples, type Sample } from '../../src/lib/prom-text.js';
import { startInfermeter } from '../../src/daemon/main.js';

export interface LlamaEngine { server: string; model: string }

export function llamaCacheRoot(env: NodeJS.ProcessEnv = process.env): string {
  return env['INFERMETER_LLAMA_CACHE'] ?? join(env['XDG_CACHE_HOME'] ?? join(homedir(), '.cache'), 'infermeter', 'llama-server');
}

export function locateLlama(env: NodeJS.ProcessEnv = process.env): LlamaEngine | string {
  const fromEnv = { server: env['INFERMETER_LLAMA_SERVER'], model: env['INFERMETER_LLAMA_MODEL'] };
  if (fromEnv.server || fromEnv.model) {
    if (!fromEnv.server || !existsSync(fromEnv.server)) return `INFERMETER_LLAMA_SERVER=${fromEnv.server ?? ''} is not a file`;
    if (!fromEnv.model || !existsSync(fromEnv.model)) return `INFERMETER_LLAMA_MODEL=${fromEnv.model ?? ''} is not a file`;
    return { server: fromEnv.server, model: fromEnv.model };
  }
  const manifest = join(llamaCacheRoot(env), 'current.json');
  if (!existsSync(manifest)) return `no llama-server: INFERMETER_LLAMA_SERVER/INFERMETER_LLAMA_MODEL are unset and ${manifest} does not exist; run \`npm run engine:llama\``;
  const m = JSON.parse(readFileSync(manifest, 'utf8')) as Partial<LlamaEngine>;
  if (!m.server || !existsSync(m.server) || !m.model || !existsSync(m.model)) return `${manifest} names files that are gone; run \`npm run engine:llama\``;
  return { server: m.server, model: m.model };
}

/**
 * Declares the file's tests when the engine is there. Otherwise one test that fails under
 * CI=true, or is skipped (reason printed) elsewhere.
 */
export function withLlama(title: string, body: (engine: LlamaEngine) => void): void {
  const found = locateLlama();
  if (typeof found !== 'string') return body(found);
  const ci = process.env['CI'];
  if (ci !== undefined && ci !== '' && ci !== 'false' && ci !== '0') {
    test(title, () => { throw new Error(`real-engine test cannot run under CI: ${found}`); });
  } else {
    console.log(`# skipping "${title}": ${found}`);
    test(title, { skip: found }, () => undefined);
  }
}

export { freePort } from '../../bench/lib.js';
import { freePort } from '../../bench/lib.js';

export interface LlamaServer {
  url: string;
  proc: ChildProcess;
  /** The last lines llama-server wrote (for failure messages). */
  logTail(): string;
  close(): Promise<void>;
}

export interface LlamaOptions { parallel?: number; ctx?: number; threads?: number; cpu?: string | null; extra?: string[] }

/**
 * Starts llama-server and waits until /health says ok (model loaded). The port was free a
 * moment before; should another process take it first, the server exits and we try again.
 */
export async function startLlamaServer(engine: LlamaEngine, opts: LlamaOptions = {}): Promise<LlamaServer> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startLlamaServerOnce(engine, opts, await freePort());
    } catch (err) {
      if (attempt >= 3 || !(err instanceof PortTaken)) throw err;
    }
  }
}

class PortTaken extends Error {}

async function startLlamaServerOnce(engine: LlamaEngine, opts: LlamaOptions, port: number): Promise<LlamaServer> {
  const args = [
    '-m', engine.model, '--host', '127.0.0.1', '--port', String(port),
    '--parallel', String(opts.parallel ?? 2), '-c', String(opts.ctx ?? 2048),
    '--threads', String(opts.threads ?? 1), '--threads-batch', String(opts.threads ?? 1),
    '--metrics', '--slots', '--no-webui', '--alias', 'tiny-llama', ...(opts.extra ?? []),
  ];
  const [cmd, argv] = opts.cpu ? ['taskset', ['-c', opts.cpu, engine.server, ...args]] : [engine.server, args];
  const proc = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  const keep = (b: Buffer) => {
    lines.push(...b.toString('utf8').split('\n').filter((l) => l !== ''));
    if (lines.length > 60) lines.splice(0, lines.length - 60);
  };
  proc.stdout!.on('data', keep);
  proc.stderr!.on('data', keep);
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  const server: LlamaServer = {
    url,
    proc,
    logTail: () => lines.join('\n'),
    async close() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      proc.kill('SIGTERM');
      const t = setTimeout(() => proc.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(t);
    },
  };
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (proc.exitCode !== null) {
      const message = `llama-server exited with code ${proc.exitCode} before it was ready:\n${server.logTail()}`;
      throw /bind|address already in use/i.test(server.logTail()) ? new PortTaken(message) : new Error(message);
    }
    try {
      const r = await fetch(`${url}/health`);
      if (r.ok) return server;
    } catch { /* not listening yet */ }
    if (Date.now() > deadline) {
      await server.close();
      throw new Error(`llama-server not healthy after 60 s:\n${server.logTail()}`);
    }
    await sleep(50);
  }
}

export interface Meter {
  url: string;
  metricsUrl: string;
  scrape(): Promise<Sample[]>;
  /**
   * Scrapes once infermeter has recorded at least `requests` requests in all. Records reach
   * the metrics worker in batches (every 20 ms), so a scrape taken right after a response
   * ended may not hold that request yet; a test that diffs two scrapes must settle first.
   */
  settled(requests: number): Promise<Sample[]>;
  close(): Promise<void>;
}

/** infermeter in front of `upstream`, on loopback ports of its own. */
export async function startMeter(upstream: string, flags: Record<string, string> = {}, logTo: NodeJS.WritableStream = process.stderr): Promise<Meter> {
  const config = resolveConfig({
    upstream, listen: '127.0.0.1:0', metricsListen: '127.0.0.1:0', engine: 'llamacpp', logLevel: 'error',
    collectorGpu: 'false', collectorHost: 'false', engineInterval: '1s', ...flags,
  }, {});
  const running = await startInfermeter(config, createLogger(config.logLevel, 'infermeter', logTo));
  const metricsUrl = `http://127.0.0.1:${running.metricsPort}/metrics`;
  const scrape = async () => parsePrometheusText(await (await fetch(metricsUrl)).text()).samples;
  return {
    url: `http://127.0.0.1:${running.proxyPort}`,
    metricsUrl,
    scrape,
    settled: (requests) => waitFor(`${requests} requests recorded`, async () => {
      const s = await scrape();
      return sum(s, 'infermeter_requests_total') >= requests ? s : undefined;
    }),
    close: () => running.close(),
  };
}

/** Polls `probe` until it returns a value that is not undefined, or fails after `ms`. */
export async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, ms = 5000, everyMs = 25): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export function sum(samples: readonly Sample[], name: string, match: Record<string, string> = {}): number {
  return sumSamples(samples, name, match);
}

export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return NaN;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
}

/** Reads an SSE response body into its `data:` payloads (parsed JSON, `[DONE]` dropped). */
export async function readSse(res: Response): Promise<{ events: Record<string, unknown>[]; arrivals: number[] }> {
  const events: Record<string, unknown>[] = [];
  const arrivals: number[] = [];
  const decoder = new TextDecoder();
  let buf = '';
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    const now = performance.now();
    buf += decoder.decode(chunk, { stream: true });
    let i: number;
    while ((i = buf.search(/\r?\n\r?\n/)) !== -1) {
      const block = buf.slice(0, i);
      buf = buf.slice(i).replace(/^\r?\n\r?\n/, '');
      const data = block.split(/\r?\n/).filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trimStart()).join('\n');
      if (data === '' || data === '[DONE]') continue;
      events.push(JSON.parse(data) as Record<string, unknown>);
      arrivals.push(now);
    }
  }
  return { events, arrivals };
}
