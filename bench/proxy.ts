/**
 * npm run bench:proxy — the same streaming load directly against a fake upstream, through
 * infermeter, and through nginx (proxy_buffering off: a plain proxy that measures nothing),
 * side by side in one run. Prints added TTFT, added inter-chunk latency, chunks/s,
 * infermeter CPU per 1,000 chunks and memory per in-flight stream. Medians and ratios only:
 * the machine is shared and noisy.
 *
 * BENCH_SECONDS (default 3) sets the length of each cell, BENCH_ROUNDS (default 3) how many
 * interleaved rounds each cell's median is taken over, BENCH_CONCURRENCY the stream counts.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'undici';
import { ROOT, closedLoop, cpuSeconds, percentile, rssBytes, sorted, startNginx, startProcess, streamOnce, type StreamSample } from './lib.js';

const SECONDS = Number(process.env['BENCH_SECONDS'] ?? 3);
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 3);
const CONCURRENCY = (process.env['BENCH_CONCURRENCY'] ?? '1,64,256').split(',').map(Number);
const MODELS = 64;
const node = process.execPath;

const upstream = await startProcess(node, [`${ROOT}dist/bench/upstream.js`], /^(\d+)\n/m, { BENCH_MODELS: String(MODELS) });
const upstreamPort = Number(upstream.match[1]);
const direct = `http://127.0.0.1:${upstreamPort}`;
const im = await startProcess(
  node,
  [`${ROOT}dist/src/cli.js`, '--upstream', direct, '--listen', '127.0.0.1:0', '--metrics-listen', '127.0.0.1:0', '--no-collector.gpu', '--no-collector.engine', '--no-collector.host', '--log-level', 'info'],
  /"proxy":"127\.0\.0\.1:(\d+)","metrics":"127\.0\.0\.1:(\d+)"/,
);
const through = `http://127.0.0.1:${im.match[1]}`;
const metricsUrl = `http://127.0.0.1:${im.match[2]}/metrics`;
const imPid = im.child.pid!;
const nginx = await startNginx(upstreamPort);
const plain = `http://127.0.0.1:${nginx.port}`;

const body = (i: number, spec = { firstMs: 20, chunks: 20, gapMs: 10 }) => JSON.stringify({ model: `bench-model-${i % MODELS}`, stream: true, messages: [{ role: 'user', content: 'bench' }], bench: spec });

interface Cell { ttftP50: number; ttftP99: number; oneWayP50: number; oneWayP99: number; requests: number; errors: number }

function summarize(samples: StreamSample[]): Cell {
  const ttft = sorted(samples.filter((s) => s.ok && s.ttft >= 0).map((s) => s.ttft));
  const ow = sorted(samples.flatMap((s) => s.oneWay));
  return { ttftP50: percentile(ttft, 50), ttftP99: percentile(ttft, 99), oneWayP50: percentile(ow, 50), oneWayP99: percentile(ow, 99), requests: samples.length, errors: samples.filter((s) => !s.ok).length };
}

async function scrapeLoop(stop: { done: boolean }): Promise<{ scrapes: number; bytes: number }> {
  let scrapes = 0;
  let bytes = 0;
  while (!stop.done) {
    const res = await request(metricsUrl);
    bytes = (await res.body.text()).length;
    scrapes++;
    await new Promise((r) => setTimeout(r, 1000));
  }
  return { scrapes, bytes };
}

// Warm up every path, and give infermeter's registry ~500 histogram series (64 models × 7 histograms).
await closedLoop(direct, 8, 500, body);
await closedLoop(plain, 8, 500, body);
const warmAgent = new Agent({ connections: 16 });
for (let i = 0; i < MODELS * 2; i++) await streamOnce(warmAgent, through, body(i, { firstMs: 1, chunks: 3, gapMs: 1 }), false);
await warmAgent.close();
await new Promise((r) => setTimeout(r, 2000)); // model list fetched; records flushed
const series = (await (await request(metricsUrl)).body.text()).split('\n').filter((l) => l.startsWith('gen_ai_server_time_to_first_token_seconds_bucket')).length;

const rows: Record<string, unknown>[] = [];
console.log(`\ninfermeter proxy benchmark: ${SECONDS}s per cell × ${ROUNDS} interleaved rounds (median of rounds); stream = 20 chunks 10 ms apart after 20 ms`);
console.log(`registry: ${MODELS} models → ${series} TTFT bucket lines (~${Math.round(series / 25)} TTFT series; 7 histograms per model)`);
console.log('\nstreams | path                   | TTFT p50 | TTFT p99 | chunk p50 | chunk p99 | +TTFT p50 | +TTFT p99 | +chunk p99 | requests');
for (const c of CONCURRENCY) {
  // Rounds interleave the paths so that noise from the shared machine hits all of them alike;
  // each figure is the median over rounds.
  const paths: [string, string, boolean][] = [['direct', direct, false], ['nginx', plain, false], ['infermeter', through, false], ['infermeter + scrape/1s', through, true]];
  const perPath = new Map<string, Cell[]>(paths.map(([n]) => [n, []]));
  let scrapes = 0;
  let bytes = 0;
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, base, scrape] of paths) {
      const stop = { done: false };
      const scraping = scrape ? scrapeLoop(stop) : null;
      perPath.get(name)!.push(summarize(await closedLoop(base, c, SECONDS * 1000, body)));
      stop.done = true;
      if (scraping) {
        const r = await scraping;
        scrapes += r.scrapes;
        bytes = r.bytes;
      }
    }
  }
  const med = (cells: Cell[], k: keyof Cell) => percentile(sorted(cells.map((x) => x[k])), 50);
  const results: [string, Cell][] = paths.map(([n]) => {
    const cells = perPath.get(n)!;
    return [n, { ttftP50: med(cells, 'ttftP50'), ttftP99: med(cells, 'ttftP99'), oneWayP50: med(cells, 'oneWayP50'), oneWayP99: med(cells, 'oneWayP99'), requests: cells.reduce((a, x) => a + x.requests, 0), errors: cells.reduce((a, x) => a + x.errors, 0) }];
  });
  const base = results[0]![1];
  for (const [name, r] of results) {
    const added = { ttftP50: r.ttftP50 - base.ttftP50, ttftP99: r.ttftP99 - base.ttftP99, chunkP99: r.oneWayP99 - base.oneWayP99 };
    rows.push({ streams: c, path: name, ...r, addedTtftP50: added.ttftP50, addedTtftP99: added.ttftP99, addedChunkP99: added.chunkP99 });
    console.log(
      `${String(c).padStart(7)} | ${name.padEnd(22)} | ${r.ttftP50.toFixed(2).padStart(8)} | ${r.ttftP99.toFixed(2).padStart(8)} | ${r.oneWayP50.toFixed(3).padStart(9)} | ${r.oneWayP99.toFixed(3).padStart(9)} | ${name === 'direct' ? '        -' : added.ttftP50.toFixed(3).padStart(9)} | ${name === 'direct' ? '        -' : added.ttftP99.toFixed(3).padStart(9)} | ${name === 'direct' ? '         -' : added.chunkP99.toFixed(3).padStart(10)} | ${r.requests}${r.errors ? ` (${r.errors} errors)` : ''}`,
    );
  }
  const ng = rows.find((x) => x['streams'] === c && x['path'] === 'nginx')!;
  const imr = rows.find((x) => x['streams'] === c && x['path'] === 'infermeter')!;
  const ims = rows.find((x) => x['streams'] === c && x['path'] === 'infermeter + scrape/1s')!;
  console.log(`        added TTFT p99: infermeter ${(imr['addedTtftP99'] as number).toFixed(3)} ms, nginx ${(ng['addedTtftP99'] as number).toFixed(3)} ms; with scrape ${(ims['addedTtftP99'] as number).toFixed(3)} ms · ${scrapes} scrapes of ${(bytes / 1024).toFixed(0)} KiB`);
}

// Throughput: 64 streams of back-to-back chunks, counted at the client.
console.log('\nthroughput (64 streams, 2000 chunks each, no gaps):');
const fast = (i: number) => body(i, { firstMs: 0, chunks: 2000, gapMs: 0 });
const tput: Record<string, number> = {};
for (const [name, base] of [['direct', direct], ['nginx', plain], ['infermeter', through]] as const) {
  const cpu0 = cpuSeconds(imPid);
  const t0 = performance.now();
  const samples = await closedLoop(base, 64, SECONDS * 1000, fast, false);
  const secs = (performance.now() - t0) / 1000;
  const chunks = samples.reduce((a, s) => a + s.chunks, 0);
  tput[name] = chunks / secs;
  const extra = name === 'infermeter' ? ` · infermeter CPU ${(((cpuSeconds(imPid) - cpu0) / chunks) * 1000 * 1000).toFixed(1)} ms per 1,000 chunks` : '';
  console.log(`  ${name.padEnd(11)} ${Math.round(chunks / secs).toLocaleString('en')} chunks/s${extra}`);
  rows.push({ phase: 'throughput', path: name, chunksPerSecond: chunks / secs });
}

// Memory: 1,000 streams held open (one chunk per second), RSS delta per in-flight stream.
const HELD = 1000;
await new Promise((r) => setTimeout(r, 1000));
const rss0 = rssBytes(imPid);
const holdAgent = new Agent({ connections: HELD + 10 });
const held = Array.from({ length: HELD }, (_, i) => streamOnce(holdAgent, through, body(i, { firstMs: 10, chunks: 6, gapMs: 1000 }), false));
await new Promise((r) => setTimeout(r, 3000));
const rss1 = rssBytes(imPid);
await Promise.all(held);
await holdAgent.close();
const perStream = (rss1 - rss0) / HELD;
console.log(`\nmemory: ${HELD} in-flight streams: RSS ${(rss0 / 2 ** 20).toFixed(1)} → ${(rss1 / 2 ** 20).toFixed(1)} MiB = ${(perStream / 1024).toFixed(1)} KiB per stream (client and upstream are other processes)`);
rows.push({ phase: 'memory', streams: HELD, rssBefore: rss0, rssDuring: rss1, bytesPerStream: perStream });

mkdirSync(`${ROOT}bench-results`, { recursive: true });
writeFileSync(`${ROOT}bench-results/proxy.json`, JSON.stringify({ date: new Date().toISOString(), seconds: SECONDS, rows }, null, 2));
console.log(`\nraw figures: bench-results/proxy.json`);
im.child.kill('SIGTERM');
upstream.child.kill('SIGTERM');
nginx.stop();
process.exit(0);
