/**
 * A fake upstream (its own process) streams on a scripted schedule: first token at 150 ms,
 * then 20 more chunks 25 ms apart, usage 21 tokens. The proxy's TTFT, TPOT and E2E must match
 * the schedule, and agree with the client's own stopwatch.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { request } from 'undici';
import { ROOT, spawnWithFirstLine, startProxy, sumSamples, waitForMetrics, type TestProxy } from '../helpers.js';

let upstream: ChildProcess;
let proxy: TestProxy;

before(async () => {
  const { child, line } = await spawnWithFirstLine(process.execPath, [`${ROOT}dist/test/fakes/upstream.js`]);
  upstream = child;
  proxy = await startProxy({ upstream: `http://127.0.0.1:${line.trim()}` });
});

after(async () => {
  await proxy.close();
  upstream.kill('SIGTERM');
});

test('TTFT, TPOT and E2E match the upstream schedule and the client stopwatch', async () => {
  // Warm the connection and the code paths, so the client's clock and the proxy's start together.
  await (await request(`${proxy.url}/v1/models`)).body.dump();
  const t0 = performance.now();
  const res = await request(`${proxy.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'fake-model', stream: true, messages: [{ role: 'user', content: 'hi' }], fake: { schedule: { firstMs: 150, chunks: 21, gapMs: 25, usage: 21 } } }),
  });
  let clientTtft = -1;
  let text = '';
  for await (const c of res.body) {
    text += (c as Buffer).toString();
    if (clientTtft < 0 && text.includes('tok0')) clientTtft = (performance.now() - t0) / 1000;
  }
  const clientE2e = (performance.now() - t0) / 1000;
  assert.equal(res.statusCode, 200);
  assert.ok(!text.includes('"usage"'), 'the injected usage chunk is hidden from a client that did not ask');

  const samples = await waitForMetrics(proxy.metricsUrl, (s) => sumSamples(s, 'gen_ai_server_request_duration_seconds_count') === 1);
  const ttft = sumSamples(samples, 'gen_ai_server_time_to_first_token_seconds_sum');
  const tpot = sumSamples(samples, 'gen_ai_server_time_per_output_token_seconds_sum');
  const e2e = sumSamples(samples, 'gen_ai_server_request_duration_seconds_sum');
  const chunkGaps = sumSamples(samples, 'infermeter_inter_chunk_latency_seconds_count');
  const outputTokens = sumSamples(samples, 'infermeter_tokens_total', { gen_ai_token_type: 'output' });

  // Timers only ever fire late, so the schedule is a floor; the slack is for a busy machine.
  assert.ok(ttft >= 0.149 && ttft < 0.150 + 0.04, `TTFT ${ttft}s vs scheduled 0.150s`);
  assert.ok(e2e >= 0.649 && e2e < 0.650 + 0.08, `E2E ${e2e}s vs scheduled 0.650s`);
  assert.ok(Math.abs(tpot - (e2e - ttft) / 20) < 1e-9, 'TPOT is (E2E - TTFT) / (tokens - 1)');
  assert.ok(tpot >= 0.0245 && tpot < 0.025 + 0.004, `TPOT ${tpot}s vs scheduled 0.025s`);
  assert.equal(outputTokens, 21);
  assert.equal(chunkGaps, 20, 'one gap between each pair of consecutive token chunks');
  // The proxy sees each chunk before the client does, and only just before. The client shares
  // this process's event loop (and the machine's 2 cores), hence a few ms of slack.
  assert.ok(clientTtft >= ttft && clientTtft - ttft < 0.01, `client TTFT ${clientTtft}s vs proxy ${ttft}s`);
  assert.ok(clientE2e >= e2e - 0.001 && clientE2e - e2e < 0.01, `client E2E ${clientE2e}s vs proxy ${e2e}s`);
});
