/**
 * How fast the simulator can stream: N concurrent streams with no simulated time
 * (--speed max), the simulator in its own process, the load generator here.
 *   node dist/bench/sim.js [concurrency=256] [maxTokens=256] [requests=concurrency*4]
 */
import { spawnSimulator } from '../src/sim/child.js';
import { runLoad, summarize } from '../src/sim/load.js';

const concurrency = Number(process.argv[2] ?? 256);
const maxTokens = Number(process.argv[3] ?? 256);
const requests = Number(process.argv[4] ?? concurrency * 4);

const sim = await spawnSimulator(['--listen', '127.0.0.1:0', '--speed', 'max', '--max-num-seqs', String(Math.max(256, concurrency))]);
try {
  await runLoad({ url: sim.url, requests: Math.min(concurrency, 32), concurrency, maxTokens: 16 }); // warm up
  const s = summarize(await runLoad({ url: sim.url, requests, concurrency, maxTokens }));
  const f = (v: number, d = 0) => v.toFixed(d);
  console.log(`simulator, ${concurrency} concurrent streams × ${maxTokens} tokens, ${requests} requests, zero step time`);
  console.log(`  ${f(s.chunksPerSecond)} chunks/s  ${f(s.outputTokensPerSecond)} tokens/s  ${f(s.requestsPerSecond, 1)} req/s  (${s.ok} ok, ${s.failed} failed, ${f(s.seconds, 2)} s)`);
  console.log(`  client-side TTFT p50 ${f(s.ttft.p50 * 1000, 1)} ms p99 ${f(s.ttft.p99 * 1000, 1)} ms; TPOT p50 ${f(s.tpot.p50 * 1000, 2)} ms`);
} finally {
  await sim.close();
}
