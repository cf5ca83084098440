/**
 * Every Messages and Responses stream (captured from llama-server, reconstructed from vLLM's
 * and SGLang's source) replayed by a fake upstream, one event per write 40 ms apart, through
 * the proxy on its own route: the client gets the exact bytes, and the proxy reports the right
 * first-token and first-output event (TTFT ≈ index × 40 ms), tokens from the API's own usage,
 * and the outcome, under route `messages` / `responses`. TTFT and TTFO are bounded by two
 * clocks on the same event, as in fixture-replay.test.ts: no earlier than index × 40 ms, no
 * later than the client (same process, same clock) held that event's bytes.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.js';
import { fixture, rawPost, startProxy, sumSamples, timedPost, waitForMetrics } from '../helpers.js';
import { TYPED_BODIES, TYPED_STREAMS, typedEventBoundaries } from '../fixture-table.js';

const GAP_MS = 40;
let upstream: FakeUpstream;

before(async () => {
  upstream = await startFakeUpstream();
  // The process's first proxied stream pays for loading and compiling the path: not what is timed here.
  const warm = await startProxy({ upstream: upstream.url });
  const bytes = fixture(TYPED_STREAMS[0]!.file);
  for (const path of ['/v1/messages', '/v1/responses']) await rawPost(`${warm.url}${path}`, { model: 'warm', stream: true, fake: { raw: { b64: bytes.toString('base64'), splits: typedEventBoundaries(bytes), delayMs: 1 } } });
  await warm.close();
});
after(() => upstream.close());

for (const exp of TYPED_STREAMS) {
  test(`${exp.file} through the proxy on ${exp.path}`, async () => {
    const proxy = await startProxy({ upstream: upstream.url });
    try {
      const bytes = fixture(exp.file);
      const route = exp.path === '/v1/messages' ? 'messages' : 'responses';
      const sent = {
        model: 'fake-model',
        stream: true,
        fake: { raw: { b64: bytes.toString('base64'), splits: typedEventBoundaries(bytes), delayMs: GAP_MS } },
      };
      const res = await timedPost(`${proxy.url}${exp.path}`, sent);
      assert.equal(res.status, 200);
      assert.ok(res.body.equals(bytes), 'client receives the upstream bytes unchanged');
      const splits = typedEventBoundaries(bytes);
      /** Seconds from sending until the client held every byte of event k. */
      const clientSawEvent = (k: number) => res.secondsWhenHeld(k < splits.length ? splits[k]! : bytes.length);
      const seen = upstream.events.find((e) => e.kind === 'request' && e.path === exp.path && e.body?.includes(bytes.toString('base64').slice(0, 40)));
      assert.ok(seen && !seen.body!.includes('stream_options'), 'no usage injection outside chat/completions');

      const outcome = exp.errorEvent ? 'stream_error' : 'ok';
      const samples = await waitForMetrics(proxy.metricsUrl, (s) => sumSamples(s, 'infermeter_requests_total', { outcome, route }) === 1);
      assert.equal(sumSamples(samples, 'infermeter_requests_total', { route, gen_ai_operation_name: 'chat', gen_ai_request_model: 'fake-model' }), 1);
      assert.equal(sumSamples(samples, 'infermeter_tokens_total', { gen_ai_token_type: 'output' }), exp.outputTokens);
      assert.equal(sumSamples(samples, 'infermeter_tokens_total', { gen_ai_token_type: 'input' }), exp.inputTokens);
      assert.equal(sumSamples(samples, 'infermeter_tokens_total', { gen_ai_token_type: 'cached_input' }), exp.cachedTokens);
      assert.equal(sumSamples(samples, 'infermeter_tokens_total', { gen_ai_token_type: 'reasoning' }), exp.reasoningTokens);
      assert.equal(sumSamples(samples, 'infermeter_output_token_source_total', { source: exp.source }), 1);
      if (outcome === 'ok') {
        const ttft = sumSamples(samples, 'gen_ai_server_time_to_first_token_seconds_sum');
        const expected = (exp.firstToken * GAP_MS) / 1000;
        const clientTtft = clientSawEvent(exp.firstToken);
        assert.ok(ttft >= expected - 0.002 && ttft <= clientTtft, `TTFT ${ttft}s, expected in [${expected}, ${clientTtft}]s (event ${exp.firstToken})`);
        const ttfo = sumSamples(samples, 'infermeter_time_to_first_output_seconds_sum');
        const expectedTtfo = (exp.firstVisible * GAP_MS) / 1000;
        const clientTtfo = clientSawEvent(exp.firstVisible);
        assert.ok(ttfo >= expectedTtfo - 0.002 && ttfo <= clientTtfo, `TTFO ${ttfo}s, expected in [${expectedTtfo}, ${clientTtfo}]s`);
        // Gaps between token events: one fewer than the token events.
        assert.equal(sumSamples(samples, 'infermeter_inter_chunk_latency_seconds_count'), exp.tokenChunks - 1);
        assert.equal(sumSamples(samples, 'gen_ai_server_time_per_output_token_seconds_count'), exp.outputTokens >= 2 ? 1 : 0);
      } else {
        assert.equal(sumSamples(samples, 'gen_ai_server_time_to_first_token_seconds_count'), 0, 'no TTFT for a failed stream');
      }
    } finally {
      await proxy.close();
    }
  });
}

for (const exp of TYPED_BODIES) {
  test(`${exp.file}: a non-streamed body on ${exp.path}: tokens from its usage, E2E, no TTFT`, async () => {
    const proxy = await startProxy({ upstream: upstream.url });
    try {
      const raw = fixture(exp.file);
      const bytes = raw.subarray(raw.indexOf('\r\n\r\n') + 4);
      const route = exp.path === '/v1/messages' ? 'messages' : 'responses';
      const res = await rawPost(`${proxy.url}${exp.path}`, { model: 'fake-model', fake: { raw: { b64: bytes.toString('base64'), contentType: 'application/json; charset=utf-8' } } });
      assert.ok(res.body.equals(bytes), 'the body unchanged');
      const samples = await waitForMetrics(proxy.metricsUrl, (s) => sumSamples(s, 'infermeter_requests_total', { outcome: 'ok', route }) === 1);
      assert.equal(sumSamples(samples, 'infermeter_tokens_total', { gen_ai_token_type: 'output' }), exp.outputTokens);
      assert.equal(sumSamples(samples, 'infermeter_tokens_total', { gen_ai_token_type: 'input' }), exp.inputTokens);
      assert.equal(sumSamples(samples, 'infermeter_tokens_total', { gen_ai_token_type: 'cached_input' }), exp.cachedTokens);
      assert.equal(sumSamples(samples, 'gen_ai_server_request_duration_seconds_count'), 1);
      assert.equal(sumSamples(samples, 'gen_ai_server_time_to_first_token_seconds_count'), 0);
    } finally {
      await proxy.close();
    }
  });
}
