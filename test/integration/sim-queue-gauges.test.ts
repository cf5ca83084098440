/**
 * With more requests than --max-num-seqs, /metrics shows max-num-seqs running and the rest
 * waiting, KV usage that matches the blocks the running prompts hold, and everything back
 * to zero (and counted as aborted) once the clients leave.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, request } from 'undici';
import { parsePrometheusText, sumSamples, type Sample } from '../../src/lib/prom-text.js';
import { startSimulator, type Simulator } from '../../src/sim/index.js';
import { get, waitFor } from '../helpers/sim.js';

const scrape = async (sim: Simulator): Promise<Sample[]> => parsePrometheusText((await get(`${sim.url}/metrics`)).text).samples;

it('running/waiting/KV gauges follow N concurrent requests beyond max-num-seqs', async () => {
  const maxNumSeqs = 4;
  const n = 10;
  const kvCacheTokens = 16_384;
  const sim = await startSimulator({ listen: '127.0.0.1:0', maxNumSeqs, kvCacheTokens, decodeStepMs: 40, stepPerSeqMs: 0, prefillTps: 0 });
  const agent = new Agent({ connections: null });
  const controllers = Array.from({ length: n }, () => new AbortController());
  // 320 tokens of text behind a distinct first character: 20 full blocks, no shared prefix.
  const prompt = 'x'.repeat(4 * 320);
  const streams = controllers.map(async (c, i) => {
    try {
      const res = await request(`${sim.url}/v1/completions`, {
        method: 'POST', dispatcher: agent, signal: c.signal, headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ prompt: `${i}${prompt}`, max_tokens: 2000, ignore_eos: true, stream: true }),
      });
      for await (const _ of res.body);
    } catch {
      /* aborted below */
    }
  });
  try {
    await waitFor(() => sim.state().running === maxNumSeqs && sim.state().waiting === n - maxNumSeqs, 'the queue to fill');
    const busy = await scrape(sim);
    assert.equal(sumSamples(busy, 'vllm:num_requests_running'), maxNumSeqs);
    assert.equal(sumSamples(busy, 'vllm:num_requests_waiting'), n - maxNumSeqs);
    const totalBlocks = kvCacheTokens / 16;
    const usage = sumSamples(busy, 'vllm:kv_cache_usage_perc');
    // Each running sequence holds its prompt's 21 blocks (321 tokens) plus one per 16 generated tokens.
    assert.ok(usage >= (maxNumSeqs * 21) / totalBlocks && usage <= (maxNumSeqs * 24) / totalBlocks, `usage ${usage}`);

    for (const c of controllers) c.abort();
    await Promise.all(streams);
    await waitFor(() => sim.state().finished.abort === n, 'the aborts to reach the engine');
    const idle = await scrape(sim);
    assert.equal(sumSamples(idle, 'vllm:num_requests_running'), 0);
    assert.equal(sumSamples(idle, 'vllm:num_requests_waiting'), 0);
    assert.equal(sumSamples(idle, 'vllm:kv_cache_usage_perc'), 0);
    assert.equal(sumSamples(idle, 'vllm:request_success_total', { finished_reason: 'abort' }), n);
  } finally {
    for (const c of controllers) c.abort();
    await agent.close();
    await sim.close();
  }
});
