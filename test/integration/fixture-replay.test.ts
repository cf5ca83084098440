/**
 * Every captured stream replayed by a fake upstream, one event per write 20 ms apart,
 * through the proxy: the client gets the exact bytes, and the proxy reports the right
 * first-token chunk (TTFT ≈ index × 20 ms), token count and outcome.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.js';
import { fixture, rawPost, startProxy, sumSamples, waitForMetrics } from '../helpers.js';
import { STREAMS, eventBoundaries } from '../fixture-table.js';

const GAP_MS = 20;
let upstream: FakeUpstream;

before(async () => {
  upstream = await startFakeUpstream();
});
after(() => upstream.close());

for (const exp of STREAMS) {
  test(`${exp.file} through the proxy`, async () => {
    const proxy = await startProxy({ upstream: upstream.url });
    try {
      const bytes = fixture(exp.file);
      const res = await rawPost(`${proxy.url}/v1/chat/completions`, {
        model: 'fake-model',
        stream: true,
        stream_options: { include_usage: true }, // asked: nothing may be stripped
        fake: { raw: { b64: bytes.toString('base64'), splits: eventBoundaries(bytes), delayMs: GAP_MS } },
      });
      assert.equal(res.status, 200);
      assert.ok(res.body.equals(bytes), 'client receives the upstream bytes unchanged');

      const outcome = exp.errorEvent ? 'stream_error' : 'ok';
      const samples = await waitForMetrics(proxy.metricsUrl, (s) => sumSamples(s, 'infermeter_requests_total', { outcome }) === 1);
      assert.equal(sumSamples(samples, 'infermeter_tokens_total', { gen_ai_token_type: 'output' }), exp.outputTokens);
      assert.equal(sumSamples(samples, 'infermeter_output_token_source_total', { source: exp.source }), 1);
      if (outcome === 'ok' && exp.firstToken >= 0) {
        const ttft = sumSamples(samples, 'gen_ai_server_time_to_first_token_seconds_sum');
        const expected = (exp.firstToken * GAP_MS) / 1000;
        assert.ok(ttft >= expected - 0.002 && ttft < expected + GAP_MS / 1000 / 2 + 0.02, `TTFT ${ttft}s, expected ≈ ${expected}s (event ${exp.firstToken})`);
        const ttfo = sumSamples(samples, 'infermeter_time_to_first_output_seconds_sum');
        const expectedTtfo = (exp.firstVisible * GAP_MS) / 1000;
        assert.ok(ttfo >= expectedTtfo - 0.002 && ttfo < expectedTtfo + 0.03, `TTFO ${ttfo}s, expected ≈ ${expectedTtfo}s`);
      } else {
        assert.equal(sumSamples(samples, 'gen_ai_server_time_to_first_token_seconds_count'), 0, 'no TTFT without a token, or for a failed stream');
      }
    } finally {
      await proxy.close();
    }
  });
}
