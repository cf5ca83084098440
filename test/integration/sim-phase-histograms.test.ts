// test-group: alone (the engine's phase times against the simulator's schedule)
/**
 * The simulator's per-phase histograms follow its scheduler as vLLM's do: queue (arrival →
 * first scheduled) + prefill (first scheduled → first token) is the engine's TTFT, and
 * decode (first token → last) is the rest of its E2E, request for request, so the sums add up.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, request } from 'undici';
import { parsePrometheusText, sumSamples } from '../../src/lib/prom-text.js';
import { startSimulator } from '../../src/sim/index.js';
import { get } from '../helpers/sim.js';

it('queue + prefill = TTFT and TTFT + decode = E2E, under queueing', async () => {
  const n = 6;
  const sim = await startSimulator({ listen: '127.0.0.1:0', maxNumSeqs: 2, decodeStepMs: 5, stepPerSeqMs: 0, prefillTps: 20_000 });
  const agent = new Agent({ connections: null });
  try {
    await Promise.all(Array.from({ length: n }, async (_, i) => {
      const res = await request(`${sim.url}/v1/completions`, {
        method: 'POST', dispatcher: agent, headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ prompt: `${i} ${'word '.repeat(400)}`, max_tokens: 12, ignore_eos: true, stream: true }),
      });
      for await (const _ of res.body);
    }));
    const samples = parsePrometheusText((await get(`${sim.url}/metrics`)).text).samples;
    const sum = (name: string) => sumSamples(samples, `vllm:${name}_sum`);
    for (const name of ['request_queue_time_seconds', 'request_prefill_time_seconds', 'request_decode_time_seconds', 'time_to_first_token_seconds', 'e2e_request_latency_seconds']) {
      assert.equal(sumSamples(samples, `vllm:${name}_count`), n, name);
    }
    assert.ok(sum('request_queue_time_seconds') > 0.01, 'with 2 slots for 6 requests, some waited');
    assert.ok(Math.abs(sum('request_queue_time_seconds') + sum('request_prefill_time_seconds') - sum('time_to_first_token_seconds')) < 1e-6);
    assert.ok(Math.abs(sum('time_to_first_token_seconds') + sum('request_decode_time_seconds') - sum('e2e_request_latency_seconds')) < 1e-6);
  } finally {
    await agent.close();
    await sim.close();
  }
});
