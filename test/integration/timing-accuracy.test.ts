// test-group: alone (the proxy's TTFT, TPOT and E2E are held to a scripted schedule within milliseconds)
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

  // Two clocks on the same events instead of a fixed allowance (issue 29: a 10 ms allowance
  // failed 1 run in 13 beside two busy processes). The client and the proxy share this
  // process's clock, the client starts its stopwatch before the proxy receives the request and
  // reads each chunk after the proxy has seen it, so a correct proxy lies between the
  // schedule (timers only ever fire late) and the client's stopwatch, however loaded the
  // machine: ttft in [0.150, clientTtft], e2e in [0.650, clientE2e]. A proxy that timed the
  // role chunk (at 0 ms) falls below the floor; one that timed a later chunk, or the end,
  // lands above the client's first-token time on any but a badly stalled machine.
  const floor = 0.001; // setTimeout rounds to whole ms and may fire up to 1 ms early on loop time
  assert.ok(ttft >= 0.150 - floor, `TTFT ${ttft}s below the scheduled 0.150s`);
  assert.ok(ttft <= clientTtft, `proxy TTFT ${ttft}s after the client saw the first token (${clientTtft}s)`);
  assert.ok(e2e >= 0.650 - floor, `E2E ${e2e}s below the scheduled 0.650s`);
  // The proxy stamps the upstream's end in the same turn that it ends the client's response;
  // the 1 ms covers the stamp landing just after the client's last read on a fast machine.
  assert.ok(e2e <= clientE2e + 0.001, `proxy E2E ${e2e}s after the client saw the end (${clientE2e}s)`);
  assert.ok(Math.abs(tpot - (e2e - ttft) / 20) < 1e-9, 'TPOT is (E2E - TTFT) / (tokens - 1)');
  assert.equal(outputTokens, 21);
  assert.equal(chunkGaps, 20, 'one gap between each pair of consecutive token chunks');
});
