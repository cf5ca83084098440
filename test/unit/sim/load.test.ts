/** The load generator: closed loop keeps N in flight, open loop spaces arrivals at the rate; results are client-side timings. */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { startSimulator } from '../../../src/sim/index.js';
import { runLoad, stats, summarize } from '../../../src/sim/load.js';

it('closed loop: every request timed, tokens from usage, never more than N running', async () => {
  const sim = await startSimulator({ listen: '127.0.0.1:0', decodeStepMs: 2, stepPerSeqMs: 0, prefillTps: 0 });
  let most = 0;
  const probe = setInterval(() => (most = Math.max(most, sim.state().running + sim.state().waiting)), 1);
  try {
    const run = await runLoad({ url: sim.url, requests: 12, concurrency: 3, maxTokens: 10 });
    const s = summarize(run);
    assert.equal(s.ok, 12);
    assert.ok(most <= 3 && most >= 1, `${most} in flight`);
    for (const r of run.results) {
      assert.equal(r.outputTokens, 10);
      assert.ok(r.ttft! > 0 && r.ttft! <= r.e2e && r.tpot! > 0);
    }
  } finally {
    clearInterval(probe);
    await sim.close();
  }
});

it('open loop at a constant rate spaces the arrivals', async () => {
  const sim = await startSimulator({ listen: '127.0.0.1:0', speed: 'max' });
  try {
    const run = await runLoad({ url: sim.url, requests: 6, rate: 50, arrivals: 'constant', maxTokens: 2, route: 'completions' });
    const starts = run.results.map((r) => r.startMs);
    assert.ok(starts[5]! - starts[0]! >= 90, `arrivals span ${starts[5]! - starts[0]!} ms, expected ~100`);
    assert.equal(summarize(run).ok, 6);
  } finally {
    await sim.close();
  }
});

it('stats: nearest-rank percentiles', () => {
  const s = stats([5, 1, 4, 2, 3]);
  assert.deepEqual([s.p50, s.p90, s.max, s.mean, s.count], [3, 5, 5, 3, 5]);
  assert.ok(Number.isNaN(stats([]).p50));
});
