/** Upstream down, slow, 500, mid-stream error event, reset mid-stream: status, body, outcome. */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.js';
import { rawPost, startProxy, sumSamples, waitForMetrics, freePort } from '../helpers.js';

let upstream: FakeUpstream;
before(async () => {
  upstream = await startFakeUpstream();
});
after(() => upstream.close());


function openAiError(body: Buffer): { error: { message: string; type: string; code: number } } {
  const doc = JSON.parse(body.toString()) as { error: { message: string; type: string; code: number } };
  assert.equal(typeof doc.error.message, 'string');
  assert.equal(typeof doc.error.type, 'string');
  return doc;
}

test('upstream refusing connections: 502 with an OpenAI-shaped error, outcome upstream_unreachable', async () => {
  const proxy = await startProxy({ upstream: `http://127.0.0.1:${await freePort()}` });
  try {
    const res = await rawPost(`${proxy.url}/v1/chat/completions`, { model: 'm', stream: true });
    assert.equal(res.status, 502);
    assert.equal(openAiError(res.body).error.type, 'upstream_refused');
    const s = await waitForMetrics(proxy.metricsUrl, (x) => sumSamples(x, 'infermeter_requests_total') === 1);
    assert.equal(sumSamples(s, 'infermeter_requests_total', { outcome: 'upstream_unreachable' }), 1);
  } finally {
    await proxy.close();
  }
});

test('upstream host that does not resolve: 503, outcome upstream_unreachable', async () => {
  const proxy = await startProxy({ upstream: 'http://infermeter-test.invalid:8000', connectTimeout: '2s' });
  try {
    const res = await rawPost(`${proxy.url}/v1/completions`, { model: 'm' });
    assert.equal(res.status, 503);
    assert.equal(openAiError(res.body).error.type, 'upstream_unreachable');
    const s = await waitForMetrics(proxy.metricsUrl, (x) => sumSamples(x, 'infermeter_requests_total') === 1);
    assert.equal(sumSamples(s, 'infermeter_requests_total', { outcome: 'upstream_unreachable' }), 1);
  } finally {
    await proxy.close();
  }
});

test('upstream too slow to answer: 504, outcome upstream_timeout', async () => {
  const proxy = await startProxy({ upstream: upstream.url, headersTimeout: '200ms' });
  try {
    // undici times headers on its coarse clock (ticks of about half a second): a 200 ms timeout
    // fires between 0.5 and 1 s, so headers 1 s late were a race it lost on a busy machine.
    const res = await rawPost(`${proxy.url}/v1/chat/completions`, { model: 'fake-model', stream: true, fake: { headersDelayMs: 3000 } });
    assert.equal(res.status, 504);
    assert.equal(openAiError(res.body).error.type, 'upstream_timeout');
    const s = await waitForMetrics(proxy.metricsUrl, (x) => sumSamples(x, 'infermeter_requests_total') === 1);
    assert.equal(sumSamples(s, 'infermeter_requests_total', { outcome: 'upstream_timeout' }), 1);
  } finally {
    await proxy.close();
  }
});

test('upstream stalls mid-stream past the idle timeout: the stream is cut, outcome upstream_timeout', async () => {
  const proxy = await startProxy({ upstream: upstream.url, idleTimeout: '300ms' });
  try {
    await assert.rejects(rawPost(`${proxy.url}/v1/chat/completions`, { model: 'fake-model', stream: true, fake: { schedule: { firstMs: 5, chunks: 10, gapMs: 5 }, fault: { afterChunks: 3, kind: 'hang' } } }));
    const s = await waitForMetrics(proxy.metricsUrl, (x) => sumSamples(x, 'infermeter_requests_total') === 1);
    assert.equal(sumSamples(s, 'infermeter_requests_total', { outcome: 'upstream_timeout' }), 1);
    assert.equal(sumSamples(s, 'gen_ai_server_time_to_first_token_seconds_count'), 0, 'latency histograms hold ok requests only');
  } finally {
    await proxy.close();
  }
});

test('upstream 500: status and body relayed unchanged, outcome upstream_error', async () => {
  const proxy = await startProxy({ upstream: upstream.url });
  try {
    const body = '{"object":"error","message":"boom","type":"InternalServerError","code":500}';
    const res = await rawPost(`${proxy.url}/v1/chat/completions`, { model: 'fake-model', stream: true, fake: { status: { code: 500, body } } });
    assert.equal(res.status, 500);
    assert.equal(res.body.toString(), body);
    const s = await waitForMetrics(proxy.metricsUrl, (x) => sumSamples(x, 'infermeter_requests_total') === 1);
    assert.equal(sumSamples(s, 'infermeter_requests_total', { outcome: 'upstream_error' }), 1);
  } finally {
    await proxy.close();
  }
});

test('mid-stream {"error":...} event: relayed, outcome stream_error, partial tokens counted', async () => {
  const proxy = await startProxy({ upstream: upstream.url });
  try {
    const res = await rawPost(`${proxy.url}/v1/chat/completions`, { model: 'fake-model', stream: true, fake: { schedule: { firstMs: 5, chunks: 10, gapMs: 2 }, fault: { afterChunks: 4, kind: 'error' } } });
    assert.equal(res.status, 200);
    assert.match(res.body.toString(), /"error":\{"message":"injected failure"/);
    const s = await waitForMetrics(proxy.metricsUrl, (x) => sumSamples(x, 'infermeter_requests_total') === 1);
    assert.equal(sumSamples(s, 'infermeter_requests_total', { outcome: 'stream_error' }), 1);
    assert.equal(sumSamples(s, 'infermeter_tokens_total', { gen_ai_token_type: 'output' }), 3, 'role chunk + 3 content chunks were sent: 3 tokens');
    assert.equal(sumSamples(s, 'gen_ai_server_request_duration_seconds_count'), 0);
  } finally {
    await proxy.close();
  }
});

test('upstream resets the connection mid-stream: client stream is cut, outcome stream_error', async () => {
  const proxy = await startProxy({ upstream: upstream.url });
  try {
    await assert.rejects(rawPost(`${proxy.url}/v1/chat/completions`, { model: 'fake-model', stream: true, fake: { schedule: { firstMs: 5, chunks: 10, gapMs: 2 }, fault: { afterChunks: 4, kind: 'reset' } } }));
    const s = await waitForMetrics(proxy.metricsUrl, (x) => sumSamples(x, 'infermeter_requests_total') === 1);
    assert.equal(sumSamples(s, 'infermeter_requests_total', { outcome: 'stream_error' }), 1);
  } finally {
    await proxy.close();
  }
});
