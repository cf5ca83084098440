/** A client that leaves mid-stream: the upstream sees its connection closed at once. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { streamUntilThenAbort, sumSamples, upstreamEvent, waitForMetrics, proxyOverFakeUpstream } from '../helpers.js';

const env = proxyOverFakeUpstream();

test('client abort mid-stream closes the upstream request within 100 ms; outcome client_abort', async () => {
  const abortedAt = await streamUntilThenAbort(env.proxy.url, { model: 'fake-model', stream: true, fake: { schedule: { firstMs: 10, chunks: 1000, gapMs: 10 } } }, 'tok3');
  const closed = await upstreamEvent(env.upstream, 'closed-early');
  assert.ok(closed, 'the upstream saw its request closed');
  assert.ok(closed.at - abortedAt < 100, `upstream closed ${closed.at - abortedAt} ms after the client left`);
  const s = await waitForMetrics(env.proxy.metricsUrl, (x) => sumSamples(x, 'infermeter_requests_total') === 1);
  assert.equal(sumSamples(s, 'infermeter_requests_total', { outcome: 'client_abort' }), 1);
  assert.equal(sumSamples(s, 'infermeter_requests_in_flight'), 0);
});

test('client abort while waiting for the first token also aborts upstream', async () => {
  const before = env.upstream.events.filter((e) => e.kind === 'closed-early').length;
  const ac = new AbortController();
  const pending = request(`${env.proxy.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'fake-model', stream: true, fake: { headersDelayMs: 2000 } }),
    signal: ac.signal,
  });
  await new Promise((r) => setTimeout(r, 100));
  ac.abort();
  await assert.rejects(pending);
  const deadline = Date.now() + 3000;
  while (env.upstream.events.filter((e) => e.kind === 'closed-early').length === before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  assert.ok(env.upstream.events.filter((e) => e.kind === 'closed-early').length > before, 'upstream request closed');
  const s = await waitForMetrics(env.proxy.metricsUrl, (x) => sumSamples(x, 'infermeter_requests_total', { outcome: 'client_abort' }) === 2);
  assert.equal(sumSamples(s, 'infermeter_requests_in_flight'), 0);
});
