/**
 * Real-engine benchmark: TTFT and inter-chunk latency of streaming chat against a real
 * llama-server, direct, through nginx (proxy_buffering off: a plain proxy that measures
 * nothing, when nginx is installed) and through infermeter, side by side (median, p99, ratio,
 * added ms). infermeter − nginx is what metering costs beyond being a proxy at all.
 *
 * CPU split (2 cores here): llama-server on core 1 (taskset, 1 thread), infermeter as its own
 * process on core 0, nginx (1 worker) and this client also on core 0. Requests rotate over the
 * targets one at a time, with the same prompt for each round and the order rotating, so drift
 * and prompt caching hit every side alike. Needs `npm run engine:llama` first (or
 * INFERMETER_LLAMA_SERVER/_MODEL).
 *
 *   npm run bench:llama -- [--requests 200] [--max-tokens 64] [--server-cpu 1] [--proxy-cpu 0] [--client-cpu 0]
 *     [--infermeter-flags=--no-collector.engine]   (flags for the infermeter process, space-separated)
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { startNginx } from './lib.js';
import { freePort, locateLlama, quantile, readSse, sleep, startLlamaServer } from '../test/integration/llama-harness.js';

const { values: opts } = parseArgs({
  options: {
    requests: { type: 'string', default: '200' }, 'max-tokens': { type: 'string', default: '64' }, warmup: { type: 'string', default: '10' },
    'infermeter-flags': { type: 'string', default: '' },
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
    '--engine', 'llamacpp', '--log-level', 'warn', '--no-collector.gpu', '--no-collector.host',
    ...(opts['infermeter-flags'] ?? '').split(' ').filter((a) => a !== '')];
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

function table(targets: { name: string; samples: Sample[] }[]): string[] {
  const nginx = targets.length === 3 ? targets[1]! : null;
  const pick = { TTFT: (s: Sample[]) => s.map((x) => x.ttft), 'inter-chunk': (s: Sample[]) => s.flatMap((x) => x.gaps) };
  const head = ['ms', ...targets.map((t) => t.name), 'infermeter / direct', 'infermeter − direct', ...(nginx ? ['infermeter − nginx'] : [])];
  const lines = [`| ${head.join(' | ')} |`, `| ${head.map(() => '---').join(' | ')} |`];
  const signed = (x: number) => (x >= 0 ? '+' : '') + x.toFixed(3);
  for (const [metric, values] of Object.entries(pick)) {
    for (const q of [0.5, 0.99]) {
      const v = targets.map((t) => quantile(values(t.samples), q));
      const d = v[0]!;
      const i = v.at(-1)!;
      const cells = [`${metric} p${q * 100}`, ...v.map((x) => x.toFixed(3)), (i / d).toFixed(3), signed(i - d), ...(nginx ? [signed(i - v[1]!)] : [])];
      lines.push(`| ${cells.join(' | ')} |`);
    }
  }
  return lines;
}

async function main(): Promise<void> {
  const engine = locateLlama();
  if (typeof engine === 'string') throw new Error(engine);
  // Children spawned from here on (nginx) inherit the client's core; llama-server and
  // infermeter are pinned explicitly.
  spawnSync('taskset', ['-p', '-c', opts['client-cpu']!, String(process.pid)], { stdio: 'ignore' });
  const llama = await startLlamaServer(engine, { parallel: 1, threads: 1, cpu: opts['server-cpu']! });
  const meter = await startInfermeterProcess(llama.url, opts['proxy-cpu']!);
  const hasNginx = spawnSync('sh', ['-c', 'command -v nginx'], { stdio: 'ignore' }).status === 0;
  const nginx = hasNginx ? await startNginx(Number(new URL(llama.url).port)) : null;
  const targets = [
    { name: 'direct', url: llama.url, samples: [] as Sample[] },
    ...(nginx ? [{ name: 'nginx', url: `http://127.0.0.1:${nginx.port}`, samples: [] as Sample[] }] : []),
    { name: 'infermeter', url: meter.url, samples: [] as Sample[] },
  ];
  try {
    for (let i = 0; i < Number(opts.warmup); i++) for (const t of targets) await once(t.url, `warm ${i}`);
    const started = Date.now();
    const loadBefore = loadavg()[0]!;
    for (let i = 0; i < REQUESTS; i++) {
      const prompt = `Request ${i}: tell me something.`;
      // Rotate which goes first, so no side always gets the warmer cache.
      for (let k = 0; k < targets.length; k++) {
        const t = targets[(i + k) % targets.length]!;
        t.samples.push(await once(t.url, prompt));
      }
    }
    const seconds = (Date.now() - started) / 1000;
    const gaps = targets.map((t) => t.samples.reduce((n, s) => n + s.gaps.length, 0));
    const lines = [
      `llama-server (1 thread, --parallel 1) on core ${opts['server-cpu']}; infermeter process${opts['infermeter-flags'] ? ` (${opts['infermeter-flags']})` : ''} on core ${opts['proxy-cpu']}; client${nginx ? ' and nginx (1 worker)' : ''} on core ${opts['client-cpu']}${nginx ? '' : '; nginx not installed: no plain-proxy column'}`,
      `${REQUESTS} streaming chat requests per target, max_tokens ${MAX_TOKENS}, rotating, ${seconds.toFixed(0)} s; 1-min load average before ${loadBefore.toFixed(2)}, after ${loadavg()[0]!.toFixed(2)}`,
      `token chunks per request: ${targets.map((t) => `${t.name} ${quantile(t.samples.map((s) => s.chunks), 0.5)}`).join(', ')}; inter-chunk samples per target: ${gaps.join(' / ')}`,
      '',
      ...table(targets),
    ];
    console.log(lines.join('\n'));
    mkdirSync('bench-results', { recursive: true });
    writeFileSync(`bench-results/llama-${new Date().toISOString().replace(/[:.]/g, '-')}.json`,
      JSON.stringify({ opts, seconds, targets: targets.map((t) => ({ name: t.name, ttft: t.samples.map((s) => s.ttft), gaps: t.samples.flatMap((s) => s.gaps) })) }));
  } finally {
    nginx?.stop();
    meter.proc.kill('SIGTERM');
    await llama.close();
  }
}

main().catch((err: unknown) => {
  console.error(`bench:llama: ${(err as Error).message}`);
  process.exit(1);
});
