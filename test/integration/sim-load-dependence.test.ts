// test-group: alone (latency against load, read from the simulator's timing)
/**
 * Latency depends on load the way continuous batching makes it: at 32 concurrent streams
 * both TTFT (prefill queued behind others' chunks) and TPOT (bigger decode steps) are
 * well above a lone stream's. Fast settings; only directions and generous ratios.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { startSimulator } from '../../src/sim/index.js';
import { runLoad, summarize } from '../../src/sim/load.js';

it('TTFT and TPOT at 32 concurrent streams are well above one stream', async () => {
  // A lone decode step is ~4.5 ms; with 32 sequences ~20 ms. Prefill: 32 prompts of ~200 tokens share 2048-token steps.
  const sim = await startSimulator({ listen: '127.0.0.1:0', decodeStepMs: 4, stepPerSeqMs: 0.5, prefillTps: 40_000 });
  try {
    const prompt = (i: number) => `${i} ${'a few words of prompt '.repeat(36)}`;
    const single = summarize(await runLoad({ url: sim.url, requests: 4, concurrency: 1, maxTokens: 24, prompt }));
    const loaded = summarize(await runLoad({ url: sim.url, requests: 64, concurrency: 32, maxTokens: 24, prompt }));
    assert.equal(single.ok + loaded.ok, 68);
    const ttftRatio = loaded.ttft.p50 / single.ttft.p50;
    const tpotRatio = loaded.tpot.p50 / single.tpot.p50;
    assert.ok(ttftRatio > 2, `TTFT p50 ${single.ttft.p50}s alone vs ${loaded.ttft.p50}s at 32 (ratio ${ttftRatio})`);
    assert.ok(tpotRatio > 1.5, `TPOT p50 ${single.tpot.p50}s alone vs ${loaded.tpot.p50}s at 32 (ratio ${tpotRatio})`);
  } finally {
    await sim.close();
  }
});
