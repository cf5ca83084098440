/**
 * How fast the simulator can stream: N concurrent streams with no simulated time
 * (--speed max), the simulator in its own process, the load generator here. Prints the
 * chunks/s achieved and the simulator's CPU time per chunk (Linux: /proc), which bounds
 * what one core can serve whatever the load generator costs.
 *   node dist/bench/sim.js [concurrency=256] [maxTokens=256] [requests=concurrency*4]
 */
import { readFileSync } from 'node:fs';
import { spawnSimulator } from '../src/sim/child.js';
import { runLoad, summarize } from '../src/sim/load.js';

const concurrency = Number(process.argv[2] ?? 256);
const maxTokens = Number(process.argv[3] ?? 256);
const requests = Number(process.argv[4] ?? concurrency * 4);

const sim = await spawnSimulator(['--listen', '127.0.0.1:0', '--speed', 'max', '--max-num-seqs', String(Math.max(256, concurrency))]);
/** CPU seconds (user + system) the simulator process has used; NaN where /proc is missing. */
const simCpu = (): number => {
  try {
    const fields = readFileSync(`/proc/${sim.child.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return NaN;
  }
};
try {
  await runLoad({ url: sim.url, requests: Math.min(concurrency, 32), concurrency, maxTokens: 16 }); // warm up
  const cpu0 = simCpu();
  const s = summarize(await runLoad({ url: sim.url, requests, concurrency, maxTokens }));
  const chunks = s.chunksPerSecond * s.seconds;
  const usPerChunk = ((simCpu() - cpu0) / chunks) * 1e6;
  const f = (v: number, d = 0) => v.toFixed(d);
  console.log(`simulator, ${concurrency} concurrent streams × ${maxTokens} tokens, ${requests} requests, zero step time`);
  console.log(`  ${f(s.chunksPerSecond)} chunks/s  ${f(s.requestsPerSecond, 1)} req/s  (${s.ok} ok, ${s.failed} failed, ${f(s.seconds, 2)} s)`);
  console.log(`  simulator CPU ${f(usPerChunk, 1)} µs per chunk (≈ ${f(1e6 / usPerChunk)} chunks/s per core)`);
  console.log(`  client-side TTFT p50 ${f(s.ttft.p50 * 1000, 1)} ms p99 ${f(s.ttft.p99 * 1000, 1)} ms; TPOT p50 ${f(s.tpot.p50 * 1000, 2)} ms`);
} finally {
  await sim.close();
}
