/**
 * Real-engine benchmark: TTFT and inter-chunk latency of streaming chat against a real
 * llama-server, direct and through infermeter, side by side (median, p99, ratio, added ms).
 *
 * CPU split (2 cores here): llama-server on core 1 (taskset, 1 thread), infermeter as its own
 * process on core 0, and this client also on core 0. Requests alternate direct / proxied, one
 * at a time, with the same prompt for each pair, so drift and prompt caching hit both sides
 * alike. Needs `npm run engine:llama` first (or INFERMETER_LLAMA_SERVER/_MODEL).
 *
 *   npm run bench:llama -- [--requests 200] [--max-tokens 64] [--server-cpu 1] [--proxy-cpu 0] [--client-cpu 0]
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { freePort, locateLlama, quantile, readSse, sleep, startLlamaServer } from '../test/integration/llama-harness.js';

const { values: opts } = parseArgs({
  options: {
    requests: { type: 'string', default: '200' }, 'max-tokens': { type: 'string', default: '64' }, warmup: { type: 'string', default: '10' },
    'server-cpu': { type: 'string', default: '1' }, 'proxy-cpu': { type: 'string', default: '0' }, 'client-cpu': { type: 'string', default: '0' },
  },
});
const REQUESTS = Number(opts.requests);
const MAX_TOKENS = Number(opts['max-tokens']);

interface Sample { ttft: number; gaps: number[]; chunks: number }

async function once(base: string, prompt: string): Promise<Sample> {
  const sent = performance.now();
  const res = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'tiny-llama', messages: [{ role: 'user', content: prompt }], stream: true, max_tokens: MAX_TOKENS, temperature: 0 }),
  });
  if (res.status !== 200) throw new Error(`${base}: HTTP ${res.status} ${await res.text()}`);
  const { events, arrivals } = await readSse(res);
  const times = events.flatMap((e, i) => {
    const delta = (e['choices'] as { delta?: { content?: string } }[] | undefined)?.[0]?.delta;
    return delta?.content ? [arrivals[i]!] : [];
  });
  if (times.length < 2) throw new Error(`${base}: only ${times.length} token chunks`);
  return { ttft: times[0]! - sent, gaps: times.slice(1).map((t, i) => t - times[i]!), chunks: times.length };
}

async function startInfermeterProcess(upstream: string, cpu: string): Promise<{ url: string; proc: ChildProcess }> {
  const [port, metricsPort] = [await freePort(), await freePort()];
  const cli = new URL('../src/cli.js', import.meta.url).pathname;
  const args = [cli, '--upstream', upstream, '--listen', `127.0.0.1:${port}`, '--metrics-listen', `127.0.0.1:${metricsPort}`,
    '--engine', 'llamacpp', '--log-level', 'warn', '--no-collector.gpu', '--no-collector.host'];
  const proc = spawn('taskset', ['-c', cpu, process.execPath, ...args], { stdio: ['ignore', 'inherit', 'inherit'] });
  for (let i = 0; i < 200; i++) {
    try {
      // The metrics listener comes up first; llama-server's /health through the proxy means both are up.
      if ((await fetch(`http://127.0.0.1:${port}/health`)).ok) return { url: `http://127.0.0.1:${port}`, proc };
    } catch { /* starting */ }
    await sleep(50);
  }
  proc.kill();
  throw new Error('infermeter did not start');
}

function row(name: string, direct: number[], proxied: number[]): string {
  const cells = [0.5, 0.99].flatMap((q) => {
    const d = quantile(direct, q);
    const p = quantile(proxied, q);
    return [d.toFixed(3), p.toFixed(3), (p / d).toFixed(3), (p - d >= 0 ? '+' : '') + (p - d).toFixed(3)];
  });
  return `| ${name} | ${cells.join(' | ')} |`;
}

async function main(): Promise<void> {
  const engine = locateLlama();
  if (typeof engine === 'string') throw new Error(engine);
  spawnSync('taskset', ['-p', '-c', opts['client-cpu']!, String(process.pid)], { stdio: 'ignore' });
  const llama = await startLlamaServer(engine, { parallel: 1, threads: 1, cpu: opts['server-cpu']! });
  const meter = await startInfermeterProcess(llama.url, opts['proxy-cpu']!);
  try {
    for (let i = 0; i < Number(opts.warmup); i++) {
      await once(llama.url, `warm ${i}`);
      await once(meter.url, `warm ${i}`);
    }
    const direct: Sample[] = [];
    const proxied: Sample[] = [];
    const started = Date.now();
    const loadBefore = loadavg()[0]!;
    for (let i = 0; i < REQUESTS; i++) {
      const prompt = `Request ${i}: tell me something.`;
      // Alternate which goes first, so neither side always gets the warmer cache.
      if (i % 2 === 0) {
        direct.push(await once(llama.url, prompt));
        proxied.push(await once(meter.url, prompt));
      } else {
        proxied.push(await once(meter.url, prompt));
        direct.push(await once(llama.url, prompt));
      }
    }
    const seconds = (Date.now() - started) / 1000;
    const ttft = (s: Sample[]) => s.map((x) => x.ttft);
    const gaps = (s: Sample[]) => s.flatMap((x) => x.gaps);
    const lines = [
      `llama-server (1 thread, --parallel 1) on core ${opts['server-cpu']}; infermeter process on core ${opts['proxy-cpu']}; client on core ${opts['client-cpu']}`,
      `${REQUESTS} streaming chat requests per side, max_tokens ${MAX_TOKENS}, alternating, ${seconds.toFixed(0)} s; 1-min load average before ${loadBefore.toFixed(2)}, after ${loadavg()[0]!.toFixed(2)}`,
      `token chunks per request: direct ${quantile(direct.map((s) => s.chunks), 0.5)}, proxied ${quantile(proxied.map((s) => s.chunks), 0.5)}; inter-chunk samples: ${gaps(direct).length} / ${gaps(proxied).length}`,
      '',
      '| ms | direct p50 | infermeter p50 | ratio p50 | added p50 | direct p99 | infermeter p99 | ratio p99 | added p99 |',
      '| --- | --- | --- | --- | --- | --- | --- | --- | --- |',
      row('TTFT', ttft(direct), ttft(proxied)),
      row('inter-chunk', gaps(direct), gaps(proxied)),
    ];
    console.log(lines.join('\n'));
    mkdirSync('bench-results', { recursive: true });
    writeFileSync(`bench-results/llama-${new Date().toISOString().replace(/[:.]/g, '-')}.json`,
      JSON.stringify({ opts, seconds, direct: { ttft: ttft(direct), gaps: gaps(direct) }, proxied: { ttft: ttft(proxied), gaps: gaps(proxied) } }));
  } finally {
    meter.proc.kill('SIGTERM');
    await llama.close();
  }
}

main().catch((err: unknown) => {
  console.error(`bench:llama: ${(err as Error).message}`);
  process.exit(1);
});
