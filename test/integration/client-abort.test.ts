// test-group: alone (the upstream must see the close within a deadline)
/** A client that leaves mid-stream: the upstream sees its connection closed at once. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { streamUntilThenAbort, sumSamples, upstreamEvent, waitForMetrics, proxyOverFakeUpstream } from '../helpers.js';

const env = proxyOverFakeUpstream();

test('client abort mid-stream closes the upstream request within 100 ms (ten of its 10 ms gaps); outcome client_abort', async () => {
  const abortedAt = await streamUntilThenAbort(env.proxy.url, { model: 'fake-model', stream: true, fake: { schedule: { firstMs: 10, chunks: 1000, gapMs: 10, relativeGaps: true } } }, 'tok3');
  const closed = await upstreamEvent(env.upstream, 'closed-early');
  assert.ok(closed, 'the upstream saw its request closed');
  // Timed by the upstream's own clock, 10 ms from one write to the next, which a busy machine
  // stretches as it stretches the abort's way through the proxy: when the client left it had
  // the role chunk and tok0..tok3 (5 writes); at most ten more may follow.
  assert.ok(closed.written! <= 5 + 10, `the upstream wrote ${closed.written! - 5} chunks after the client left (${(closed.at - abortedAt).toFixed(1)} ms)`);
  const s = await waitForMetrics(env.proxy.metricsUrl, (x) => sumSamples(x, 'infermeter_requests_total') === 1);
  assert.equal(sumSamples(s, 'infermeter_requests_total', { outcome: 'client_abort' }), 1);
  assert.equal(sumSamples(s, 'infermeter_requests_in_flight'), 0);
});

test('client abort while waiting for the first token also aborts upstream', async () => {
  const before = env.upstream.events.filter((e) => e.kind === 'closed-early').length;
  const received = () => env.upstream.events.filter((e) => e.kind === 'request' && e.path === '/v1/chat/completions').length;
  const sent = received();
  const ac = new AbortController();
  // The upstream holds the request (no headers, no token) until the test opens the gate; the
  // client leaves once the upstream has it (an event, not 100 ms that a busy machine could outlast).
  const pending = request(`${env.proxy.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'fake-model', stream: true, fake: { gate: 'abort-before-headers' } }),
    signal: ac.signal,
  });
  while (received() === sent) await new Promise((r) => setTimeout(r, 5));
  ac.abort();
  await assert.rejects(pending);
  const deadline = Date.now() + 3000;
  while (env.upstream.events.filter((e) => e.kind === 'closed-early').length === before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  assert.ok(env.upstream.events.filter((e) => e.kind === 'closed-early').length > before, 'upstream request closed');
  env.upstream.release('abort-before-headers');
  const s = await waitForMetrics(env.proxy.metricsUrl, (x) => sumSamples(x, 'infermeter_requests_total', { outcome: 'client_abort' }) === 2);
  assert.equal(sumSamples(s, 'infermeter_requests_in_flight'), 0);
});
