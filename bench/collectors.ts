/**
 * npm run bench:collectors — does a collection cycle add latency to proxied requests?
 * The same streaming load through two infermeter processes side by side in one run: one
 * with every collector off, one with all collectors at 1 s intervals (fake nvidia-smi with
 * 8 GPUs, an engine /metrics of ~5,000 lines, host). Rounds alternate between the two so
 * noise hits both alike; medians of the rounds are printed, with ratios.
 *
 * BENCH_SECONDS (default 4) per round, BENCH_ROUNDS (default 3), BENCH_STREAMS (default 64).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ROOT, closedLoop, cpuSeconds, percentile, sorted, startProcess } from './lib.js';
import { generateVllmScrape } from '../test/fakes/vllm-scrape.js';

const SECONDS = Number(process.env['BENCH_SECONDS'] ?? 4);
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 3);
const STREAMS = Number(process.env['BENCH_STREAMS'] ?? 64);
const node = process.execPath;

const scrape = generateVllmScrape(5000);
const engine = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(scrape));
await new Promise<void>((r) => engine.listen(0, '127.0.0.1', r));
const engineUrl = `http://127.0.0.1:${(engine.address() as AddressInfo).port}/metrics`;

const upstream = await startProcess(node, [`${ROOT}dist/bench/upstream.js`], /^(\d+)\n/m);
const direct = `http://127.0.0.1:${upstream.match[1]}`;
const common = ['--upstream', direct, '--listen', '127.0.0.1:0', '--metrics-listen', '127.0.0.1:0'];
const ready = /"proxy":"127\.0\.0\.1:(\d+)","metrics":"127\.0\.0\.1:(\d+)"/;
const off = await startProcess(node, [`${ROOT}dist/src/cli.js`, ...common, '--no-collector.gpu', '--no-collector.engine', '--no-collector.host'], ready);
const on = await startProcess(
  node,
  [`${ROOT}dist/src/cli.js`, ...common, '--nvidia-smi', `${ROOT}bin/fake-nvidia-smi`, '--gpu-interval', '1s', '--engine-metrics', engineUrl, '--engine-interval', '1s', '--host-interval', '1s'],
  ready,
  { FAKE_NVIDIA_SMI_GPUS: '8' },
);
const lines = scrape.split('\n').length;
console.log(`collectors benchmark: ${STREAMS} streams, ${SECONDS}s × ${ROUNDS} rounds per config, alternating; engine /metrics ${lines} lines, fake nvidia-smi 8 GPUs, all at 1 s`);
await new Promise((r) => setTimeout(r, 2500)); // first collections done

const body = (i: number) => JSON.stringify({ model: `bench-model-${i % 8}`, stream: true, messages: [{ role: 'user', content: 'x' }], bench: { firstMs: 20, chunks: 20, gapMs: 10 } });
type Series = { ttftP50: number[]; ttftP99: number[]; chunkP99: number[]; cpu: number[] };
const results: { off: Series; on: Series } = { off: { ttftP50: [], ttftP99: [], chunkP99: [], cpu: [] }, on: { ttftP50: [], ttftP99: [], chunkP99: [], cpu: [] } };
await closedLoop(`http://127.0.0.1:${off.match[1]}`, 8, 500, body);
await closedLoop(`http://127.0.0.1:${on.match[1]}`, 8, 500, body);
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, p] of [['off', off], ['on', on]] as const) {
    const cpu0 = cpuSeconds(p.child.pid!);
    const samples = await closedLoop(`http://127.0.0.1:${p.match[1]}`, STREAMS, SECONDS * 1000, body);
    const ttft = sorted(samples.filter((s) => s.ok).map((s) => s.ttft));
    const ow = sorted(samples.flatMap((s) => s.oneWay));
    const r = results[name];
    r.ttftP50.push(percentile(ttft, 50));
    r.ttftP99.push(percentile(ttft, 99));
    r.chunkP99.push(percentile(ow, 99));
    r.cpu.push((cpuSeconds(p.child.pid!) - cpu0) / SECONDS);
  }
}
const med = (xs: number[]) => percentile(sorted(xs), 50);
console.log('\n| collectors | TTFT p50 ms | TTFT p99 ms | chunk one-way p99 ms | infermeter CPU (cores) |');
console.log('| --- | --- | --- | --- | --- |');
for (const name of ['off', 'on'] as const) {
  const r = results[name];
  console.log(`| ${name} | ${med(r.ttftP50).toFixed(2)} | ${med(r.ttftP99).toFixed(2)} | ${med(r.chunkP99).toFixed(3)} | ${med(r.cpu).toFixed(2)} |`);
}
const ratio = (k: 'ttftP50' | 'ttftP99' | 'chunkP99') => med(results.on[k]) / med(results.off[k]);
console.log(`\nratios on/off: TTFT p50 ${ratio('ttftP50').toFixed(2)}, TTFT p99 ${ratio('ttftP99').toFixed(2)}, chunk p99 ${ratio('chunkP99').toFixed(2)}; added TTFT p99 ${(med(results.on.ttftP99) - med(results.off.ttftP99)).toFixed(2)} ms`);
off.child.kill('SIGTERM');
on.child.kill('SIGTERM');
upstream.child.kill('SIGTERM');
engine.close();
process.exit(0);
