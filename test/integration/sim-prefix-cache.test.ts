/**
 * A repeated prompt hits the prefix cache: vllm:prefix_cache_hits_total grows by its full
 * blocks (less the last, always recomputed) and its prefill, hence TTFT, gets shorter.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { parsePrometheusText, sumSamples } from '../../src/lib/prom-text.js';
import { startSimulator } from '../../src/sim/index.js';
import { runLoad } from '../../src/sim/load.js';
import { get } from '../helpers/sim.js';

it('repeated prompt prefixes hit the cache and shorten prefill', async () => {
  const sim = await startSimulator({ listen: '127.0.0.1:0', decodeStepMs: 1, stepPerSeqMs: 0, prefillTps: 4000 });
  const prompt = 'The quick brown fox jumps over the lazy dog. '.repeat(60); // ~700 tokens
  try {
    const first = await runLoad({ url: sim.url, requests: 1, route: 'completions', prompt, maxTokens: 2 });
    const hitsBefore = sim.state().prefixHitTokens;
    const second = await runLoad({ url: sim.url, requests: 1, route: 'completions', prompt, maxTokens: 2 });
    const scrape = parsePrometheusText((await get(`${sim.url}/metrics`)).text).samples;
    const hits = sumSamples(scrape, 'vllm:prefix_cache_hits_total');
    const queries = sumSamples(scrape, 'vllm:prefix_cache_queries_total');
    assert.equal(hitsBefore, 0);
    const fullBlocks = Math.floor(prompt.length / 64);
    assert.equal(hits, Math.min(fullBlocks, Math.floor((Math.ceil(prompt.length / 4) - 1) / 16)) * 16);
    assert.equal(queries, 2 * Math.ceil(prompt.length / 4));
    const [t1, t2] = [first.results[0]!.ttft!, second.results[0]!.ttft!];
    assert.ok(t2 * 2 < t1, `cached TTFT ${t2}s not well below uncached ${t1}s`);
  } finally {
    await sim.close();
  }
});
