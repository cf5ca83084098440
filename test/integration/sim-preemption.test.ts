/**
 * When the KV cache runs out, running sequences are preempted and recomputed, counted in
 * vllm:num_preemptions_total, and every request still completes with all its tokens.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { parsePrometheusText, sumSamples } from '../../src/lib/prom-text.js';
import { startSimulator } from '../../src/sim/index.js';
import { runLoad, summarize } from '../../src/sim/load.js';
import { get } from '../helpers/sim.js';

it('preempts under KV pressure and still completes every request', async () => {
  // 64 blocks of 16 tokens; 8 requests of ~100 prompt + 120 output tokens need ~110 blocks.
  const sim = await startSimulator({ listen: '127.0.0.1:0', speed: 'max', kvCacheTokens: 1024, maxModelLen: 512, maxNumSeqs: 8 });
  try {
    const run = await runLoad({ url: sim.url, requests: 8, concurrency: 8, maxTokens: 120, prompt: (i) => `${i} ${'word '.repeat(80)}` });
    const s = summarize(run);
    assert.equal(s.ok, 8);
    assert.ok(run.results.every((r) => r.outputTokens === 120 && r.chunks === 120));
    const scrape = parsePrometheusText((await get(`${sim.url}/metrics`)).text).samples;
    const preemptions = sumSamples(scrape, 'vllm:num_preemptions_total');
    assert.ok(preemptions > 0, 'no preemption happened');
    assert.equal(preemptions, sim.state().preemptions);
    assert.equal(sumSamples(scrape, 'vllm:kv_cache_usage_perc'), 0);
  } finally {
    await sim.close();
  }
});
