/**
 * Faults on the Messages and Responses routes, each ending in exactly one outcome with the
 * client's bytes exactly the engine's: a mid-stream `error` / `response.failed` event
 * (stream_error, every byte relayed), a client that leaves (client_abort, the engine's request
 * closed at once, the bytes it got a prefix of the engine's), and an engine that drops the
 * connection mid-body (stream_error, the client's bytes exactly what the engine wrote).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.js';
import { fixture, rawPost, startProxy, sumSamples, waitForMetrics, type TestProxy } from '../helpers.js';
import { typedEventBoundaries } from '../fixture-table.js';

let upstream: FakeUpstream;
let proxy: TestProxy;
before(async () => {
  upstream = await startFakeUpstream();
  proxy = await startProxy({ upstream: upstream.url });
});
after(async () => {
  await proxy.close();
  await upstream.close();
});

const CASES = [
  { route: 'messages', path: '/v1/messages', ok: 'vllm-messages-stream-reasoning-tool-reconstructed.sse', failed: 'vllm-messages-stream-midstream-error-reconstructed.sse' },
  { route: 'responses', path: '/v1/responses', ok: 'vllm-responses-stream-reasoning-reconstructed.sse', failed: 'openai-responses-stream-failed-synthetic.sse' },
] as const;

let expected = { stream_error: 0, client_abort: 0 };

async function outcomes(route: string): Promise<Record<string, number>> {
  const s = await waitForMetrics(proxy.metricsUrl, (x) =>
    sumSamples(x, 'infermeter_requests_total', { route, outcome: 'stream_error' }) + sumSamples(x, 'infermeter_requests_total', { route, outcome: 'client_abort' }) === expected.stream_error + expected.client_abort);
  const out: Record<string, number> = {};
  for (const o of ['ok', 'stream_error', 'client_abort', 'upstream_error']) out[o] = sumSamples(s, 'infermeter_requests_total', { route, outcome: o });
  assert.equal(sumSamples(s, 'infermeter_requests_in_flight'), 0);
  return out;
}

for (const c of CASES) {
  test(`${c.route}: a mid-stream error event is one stream_error, every byte relayed`, async () => {
    expected = { stream_error: 0, client_abort: 0 };
    const bytes = fixture(c.failed);
    const res = await rawPost(`${proxy.url}${c.path}`, { model: 'fake-model', stream: true, fake: { raw: { b64: bytes.toString('base64'), splits: typedEventBoundaries(bytes), delayMs: 5 } } });
    assert.ok(res.body.equals(bytes));
    expected.stream_error = 1;
    assert.deepEqual(await outcomes(c.route), { ok: 0, stream_error: 1, client_abort: 0, upstream_error: 0 });
  });

  test(`${c.route}: the engine drops the connection mid-body: one stream_error, the client got exactly what was written`, async () => {
    const bytes = fixture(c.ok);
    const cuts = typedEventBoundaries(bytes);
    const resetAt = cuts[Math.floor(cuts.length / 2)]! + 7; // inside an event
    const res = await request(`${proxy.url}${c.path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'fake-model', stream: true, fake: { raw: { b64: bytes.toString('base64'), splits: cuts, delayMs: 5, resetAt } } }),
    });
    const got: Buffer[] = [];
    await assert.rejects(async () => {
      for await (const chunk of res.body) got.push(chunk as Buffer);
    }, 'the client sees its stream cut short');
    assert.ok(Buffer.concat(got).equals(bytes.subarray(0, resetAt)), 'the bytes up to the drop, exactly');
    expected.stream_error = 2;
    assert.deepEqual(await outcomes(c.route), { ok: 0, stream_error: 2, client_abort: 0, upstream_error: 0 });
  });

  test(`${c.route}: a client that leaves is one client_abort; the engine's request is closed at once`, async () => {
    const bytes = fixture(c.ok);
    const closedBefore = upstream.events.filter((e) => e.kind === 'closed-early').length;
    const ac = new AbortController();
    const res = await request(`${proxy.url}${c.path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'fake-model', stream: true, fake: { raw: { b64: bytes.toString('base64'), splits: typedEventBoundaries(bytes), delayMs: 50 } } }),
      signal: ac.signal,
    });
    const got: Buffer[] = [];
    await assert.rejects(async () => {
      for await (const chunk of res.body) {
        got.push(chunk as Buffer);
        if (Buffer.concat(got).length > bytes.length / 4) ac.abort();
      }
    });
    const body = Buffer.concat(got);
    assert.ok(body.length > 0 && body.equals(bytes.subarray(0, body.length)), 'what the client got is a prefix of the engine bytes');
    const deadline = Date.now() + 3000;
    while (upstream.events.filter((e) => e.kind === 'closed-early').length === closedBefore && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    assert.ok(upstream.events.filter((e) => e.kind === 'closed-early').length > closedBefore, 'the engine request was closed');
    expected.client_abort = 1;
    assert.deepEqual(await outcomes(c.route), { ok: 0, stream_error: 2, client_abort: 1, upstream_error: 0 });
  });
}
