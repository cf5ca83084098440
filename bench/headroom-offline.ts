/**
 * Model development aid: the headroom estimate computed in-process from the load generator's
 * own timings against the simulator (no infermeter), next to the knee. Not the judged
 * figure (bench/headroom.ts reads the daemon's), but seconds instead of minutes per try.
 *   node dist/bench/headroom-offline.js decode [speed] [knee] [share ...]
 * HEADROOM_RECORD=DIR also writes each share's run (the requests and the engine readings, in
 * simulated time) as DIR/<regime>-<share>.json: the recordings test/unit/metrics/
 * headroom-regimes-replay.test.ts replays through the estimator (test/fixtures/headroom/).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REGIMES } from './headroom-regimes.js';
import { findKnee, openLoad, sleep, startSim } from './headroom-run.js';
import { observe, type HeadroomRequest } from '../src/metrics/headroom/observe.js';
import { estimateCapacity } from '../src/metrics/headroom/estimate.js';
import { parsePrometheusText } from '../src/lib/prom-text.js';
import { LimitHistory } from '../src/metrics/headroom/limits.js';
import type { MachineState } from '../src/collectors/snapshot.js';

const [name = 'decode', speedArg = '4', kneeArg, ...sharesArg] = process.argv.slice(2);
const regime = REGIMES.find((r) => r.name === name)!;
const speed = Number(speedArg);
const shares = sharesArg.length ? sharesArg.map(Number) : [0.3, 0.5, 0.7];
const simSeconds = Number(process.env['KNEE_SECONDS'] ?? 120);
const liveSeconds = Number(process.env['LIVE_SECONDS'] ?? 240);

const knee = kneeArg && kneeArg !== '-' ? Number(kneeArg) : (await findKnee(regime, speed, simSeconds, 3, (s) => console.log(`  step ${s.rate.toFixed(3)} req/s: ${s.requests} req, p99 ttft ${s.p99.ttft.toFixed(3)} tpot ${s.p99.tpot.toFixed(4)} e2e ${s.p99.e2e.toFixed(2)} ${s.broke ? 'BROKE' : 'ok'}`))).knee;
console.log(`${regime.name}: knee ${knee.toFixed(3)} req/s`);

for (const share of shares) {
  const sim = await startSim(regime, speed);
  const ms = (liveSeconds * 1000) / speed;
  const samples: { at: number; running: number; waiting: number; kv: number }[] = [];
  const limits = new LimitHistory();
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      try {
        const text = await (await fetch(`${sim.url}/metrics`)).text();
        const s = parsePrometheusText(text).samples;
        const v = (n: string) => s.filter((x) => x.name === n).reduce((a, x) => a + x.value, 0);
        samples.push({ at: Date.now(), running: v('vllm:num_requests_running'), waiting: v('vllm:num_requests_waiting'), kv: v('vllm:kv_cache_usage_perc') });
        const e = samples[samples.length - 1]!;
        limits.add({ gpus: [], engines: [{ upstream: 'u', engine: 'vllm', running: e.running, waiting: e.waiting, kvCacheUsage: e.kv, at: Date.now() }], gpuEngines: null, host: null, process: null, proxyLoop: null, collectors: [] } as unknown as MachineState, [], 0);
      } catch { /* the simulator is starting or stopping */ }
      await sleep(250 / 1);
    }
  })();
  const t0 = Date.now();
  const results = await openLoad(sim.url, regime, share * knee * speed, ms, 100).done;
  sampling = false;
  await sampler;
  await sim.close();
  const reqs: HeadroomRequest[] = results.filter((r) => r.ok && r.ttft !== null).map((r) => ({
    start: r.start, ttft: r.ttft! * speed, e2e: r.e2e * speed, inputTokens: r.promptTokens, outputTokens: r.outputTokens,
  }));
  // Simulated time: stretch starts around t0.
  for (const r of reqs) r.start = t0 + (r.start - t0) * speed;
  const to = t0 + (Date.now() - t0) * speed;
  const obs = observe(reqs, t0, to);
  const rate = results.length / ((to - t0) / 1000);
  const est = estimateCapacity({ observation: obs, requestsPerSecond: rate, thresholds: regime.slos, objective: 0.99, limits: limits.limits() });
  const record = process.env['HEADROOM_RECORD'];
  if (record) {
    mkdirSync(record, { recursive: true });
    const engine = samples.map((e) => ({ ...e, at: t0 + (e.at - t0) * speed }));
    const file = join(record, `${regime.name}-${share}.json`);
    writeFileSync(file, JSON.stringify({ regime: regime.name, share, knee, speed, offered: share * knee, from: t0, to, requestsPerSecond: rate, requests: reqs, engine }) + '\n');
    console.log(`    recorded ${file} (${reqs.length} requests, ${engine.length} engine readings)`);
  }
  const err = est.requestsPerSecond === null ? 'n/a' : `${((est.requestsPerSecond / knee - 1) * 100).toFixed(1)}%`;
  console.log(`share ${share}: offered ${(share * knee).toFixed(3)} got ${rate.toFixed(3)} req/s, usable ${obs.usable.length}; estimate ${est.requestsPerSecond} (${err}) ${est.bindingSlo}/${est.bindingLimit} ${est.reason ?? ''}`);
  console.log('   ', est.summary);
  const q = (xs: number[], p: number) => { const a = [...xs].sort((x, y) => x - y); return a[Math.min(a.length - 1, Math.ceil(p * a.length) - 1)]; };
  const tp = obs.usable.filter((o) => o.tpot !== null).map((o) => o.tpot!);
  console.log(`    observed tpot p50 ${q(tp, 0.5)?.toFixed(4)} p90 ${q(tp, 0.9)?.toFixed(4)} p99 ${q(tp, 0.99)?.toFixed(4)} max ${Math.max(...tp).toFixed(4)}; ttft p50 ${q(obs.usable.map((o) => o.ttft), 0.5)?.toFixed(3)} p99 ${q(obs.usable.map((o) => o.ttft), 0.99)?.toFixed(3)}; batch p10 ${q(obs.usable.map((o) => o.batch), 0.1)?.toFixed(2)} p90 ${q(obs.usable.map((o) => o.batch), 0.9)?.toFixed(2)}`);
  console.log('   ', est.evidence.map((e) => `${e.name}=${e.value}`).join(' '));
}
