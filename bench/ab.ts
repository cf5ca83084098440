/**
 * node dist/bench/ab.js LOAD CHUNKS ROUNDS API label=dir[,label=dir...] — builds of infermeter
 * side by side at fixed work: in each round every path relays the same number of streams
 * (AB_PER_CONNECTION per connection), and the figure is its CPU (utime + stime of all its processes and threads)
 * per stream and per chunk. bench:proxy's capacity cells run for a fixed time instead, so on a
 * busy machine a path that relayed less spreads its fixed costs over fewer chunks; here the work
 * is the same for all and only the CPU it took differs.
 *
 * LOAD is STREAMSxGAP_MS (64x5: 64 connections, one chunk per 5 ms); API is chat, messages or
 * responses; each `dir` holds a build (`dir/dist/src/cli.js`, run with --workers 1), or is
 * `bare` for bench/bare-proxy.ts. Three warm-up rounds, then ROUNDS rounds whose path order
 * rotates; each path's median and its per-round ratio to the first path (paired: the two ran
 * seconds apart). Name one build twice to see the noise of the machine in the same run.
 * AB_PER_CONNECTION (default 8) sets the streams each connection relays per cell: fewer keep a
 * cell short at 256 connections on a busy machine. Each round's figures are printed as it ends,
 * so a run cut short keeps what it measured.
 */
import { Pool } from 'undici';
import { resolve } from 'node:path';
import { ROOT, startProcess, treeCpuSeconds } from './lib.js';

const [load = '64x5', chunksArg = '40', roundsArg = '7', api = 'chat', list = `infermeter=${ROOT}`] = process.argv.slice(2);
const [streams, gapMs] = load.split('x').map(Number) as [number, number];
const chunks = Number(chunksArg);
const rounds = Number(roundsArg);
const PATHS: Record<string, string> = { chat: '/v1/chat/completions', messages: '/v1/messages', responses: '/v1/responses' };
const path = PATHS[api] ?? '';
if (path === '' || !(streams > 0) || !(gapMs >= 0) || !(chunks > 0) || !(rounds > 0)) throw new Error('usage: ab.js STREAMSxGAP_MS CHUNKS ROUNDS chat|messages|responses label=dir[,label=dir...]');

const node = process.execPath;
const upstream = await startProcess(node, [`${ROOT}dist/bench/upstream.js`], /^(\d+)\n/m, { BENCH_MODELS: '64' });
const upstreamUrl = `http://127.0.0.1:${upstream.match[1]}`;

interface Path { label: string; pid: number; stop: () => void; pool: Pool; perStream: number[] }
const paths: Path[] = [];
for (const entry of list.split(',')) {
  const at = entry.indexOf('=');
  if (at <= 0) throw new Error(`expected label=dir, got "${entry}"`);
  const [label, dir] = [entry.slice(0, at), entry.slice(at + 1)];
  const p =
    dir === 'bare'
      ? await startProcess(node, [`${ROOT}dist/bench/bare-proxy.js`, upstreamUrl], /^(\d+)\n/m)
      : await startProcess(node, [resolve(dir, 'dist/src/cli.js'), '--upstream', upstreamUrl, '--listen', '127.0.0.1:0', '--metrics-listen', '127.0.0.1:0', '--no-collector.gpu', '--no-collector.engine', '--no-collector.host', '--log-level', 'info', '--workers', '1'], /"proxy":"127\.0\.0\.1:(\d+)"/);
  paths.push({ label, pid: p.child.pid!, stop: () => p.child.kill('SIGTERM'), pool: new Pool(`http://127.0.0.1:${p.match[1]}`, { connections: streams }), perStream: [] });
}

const perCell = streams * Number(process.env['AB_PER_CONNECTION'] ?? 8);
const body = (i: number) => JSON.stringify({ model: `bench-model-${i % 64}`, stream: true, messages: [{ role: 'user', content: 'bench' }], max_tokens: 16, bench: { firstMs: gapMs, chunks, gapMs } });

/** CPU µs the path took to relay `perCell` streams. */
async function cell(p: Path): Promise<number> {
  let next = 0;
  const one = async () => {
    while (next < perCell) {
      const res = await p.pool.request({ path, method: 'POST', headers: { 'content-type': 'application/json' }, body: body(next++) });
      for await (const _ of res.body) void _;
    }
  };
  const cpu0 = treeCpuSeconds(p.pid);
  await Promise.all(Array.from({ length: streams }, one));
  // The last records reach the metrics thread within one batch interval (20 ms).
  await new Promise((r) => setTimeout(r, 100));
  return (treeCpuSeconds(p.pid) - cpu0) * 1e6;
}

for (let w = 0; w < 3; w++) for (const p of paths) await cell(p);
for (let r = 0; r < rounds; r++) {
  for (let i = 0; i < paths.length; i++) {
    const p = paths[(i + r) % paths.length]!;
    p.perStream.push((await cell(p)) / perCell);
  }
  console.log(`round ${r + 1}: ${paths.map((p) => `${p.label} ${(p.perStream[r]! / chunks).toFixed(1)}`).join(', ')} µs/chunk`);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
const first = paths[0]!;
console.log(`${streams} × ${gapMs} ms, ${chunks} chunks per stream, ${api}; ${perCell} streams per cell, ${rounds} rounds, order rotating`);
console.log(`path         | CPU µs/stream | CPU µs/chunk | × ${first.label} (paired rounds: median [min .. max]) | per round µs/chunk`);
for (const p of paths) {
  const paired = p.perStream.map((x, i) => x / first.perStream[i]!);
  console.log(`${p.label.padEnd(12)} | ${median(p.perStream).toFixed(0).padStart(13)} | ${(median(p.perStream) / chunks).toFixed(1).padStart(12)} | ${median(paired).toFixed(3)} [${Math.min(...paired).toFixed(3)} .. ${Math.max(...paired).toFixed(3)}] | ${p.perStream.map((x) => (x / chunks).toFixed(1)).join(' ')}`);
}
for (const p of paths) {
  await p.pool.close();
  p.stop();
}
upstream.child.kill('SIGTERM');
