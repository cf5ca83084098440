// test-group: alone (concurrency bands read while streams overlap in time)
/**
 * Under --workers 2 the in_flight_le band counts the whole machine: 24 concurrent streams spread
 * over two proxy processes (about 12 each) still land in band 32, not 16.
 *
 * Each worker reports its count to the primary in batches (within 20 ms, later when busy), so
 * the tests wait for the event rather than a time: the machine-wide in-flight gauge showing
 * every stream (both workers' counts have reached the primary) before the first tokens are let
 * out (a gate in the fake upstream), or before the later streams start.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, request } from 'undici';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.js';
import { startProxy, sumSamples, waitForMetrics, type TestProxy } from '../helpers.js';

let upstream: FakeUpstream;
let proxy: TestProxy;
before(async () => {
  upstream = await startFakeUpstream();
  proxy = await startProxy({ upstream: upstream.url, workers: '2' });
});
after(async () => {
  await proxy.close();
  await upstream.close();
});

test('24 concurrent streams over two workers are in band 32 (machine-wide), one stream alone in band 1', async () => {
  const name = 'infermeter_time_per_output_token_by_concurrency_seconds_count';
  const agent = new Agent({ connections: 32 });
  const one = async (fake: Record<string, unknown>, onFirstToken = () => {}) => {
    const res = await request(`${proxy.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'fake-model', stream: true, fake }), dispatcher: agent });
    let seen = false;
    for await (const c of res.body) {
      if (!seen && (c as Buffer).includes('tok0')) {
        seen = true;
        onFirstToken();
      }
    }
  };
  await one({ schedule: { firstMs: 5, chunks: 5, gapMs: 2 } });
  await waitForMetrics(proxy.metricsUrl, (s) => sumSamples(s, name) === 1);
  // The 24 wait at the upstream until the primary counts all of them in flight, and stop after
  // their first token until every client has read its own (so infermeter timed each first
  // token before any of the 24 ended): every first token sees all 24, whatever the load.
  // 100 ms to the first token: more than the two processes' clocks differ.
  let firstTokens = 0;
  const streams = Array.from({ length: 24 }, () =>
    one({ gate: 'band', pause: { afterChunks: 2, gate: 'rest' }, schedule: { firstMs: 100, chunks: 5, gapMs: 2 } }, () => {
      if (++firstTokens === 24) upstream.release('rest');
    }));
  await waitForMetrics(proxy.metricsUrl, (s) => sumSamples(s, 'infermeter_requests_in_flight') === 24, 15_000);
  upstream.release('band');
  await Promise.all(streams);
  await agent.close();
  const s = await waitForMetrics(proxy.metricsUrl, (x) => sumSamples(x, name) === 25, 5000);
  assert.equal(sumSamples(s, name, { in_flight_le: '1' }), 1);
  assert.equal(sumSamples(s, name, { in_flight_le: '32' }), 24, `bands: ${JSON.stringify(s.filter((x) => x.name === name).map((x) => [x.labels['in_flight_le'], x.value]))}`);
});

test('the slow-request log counts in flight at start machine-wide: 12 streams on two workers, then 12 more each see at least 13', async () => {
  const agent = new Agent({ connections: 32 });
  const post = (fake: Record<string, unknown>, signal?: AbortSignal) =>
    request(`${proxy.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'fake-model-2', stream: true, fake }), dispatcher: agent, signal });
  // The first 12 stay in flight (the upstream sends nothing) until the client leaves: a client
  // abort is no slow request, so the log's slowest-TTFT list holds only the 12 that follow
  // (on a model of their own: the first test's streams are in the log too).
  const leave = new AbortController();
  const first = Array.from({ length: 12 }, async () => {
    const res = await post({ schedule: { firstMs: 5, chunks: 5, gapMs: 60 }, fault: { afterChunks: 0, kind: 'hang' } }, leave.signal);
    await res.body.text();
  });
  await waitForMetrics(proxy.metricsUrl, (s) => sumSamples(s, 'infermeter_requests_in_flight') === 12, 15_000);
  await Promise.all(Array.from({ length: 12 }, async () => (await post({ schedule: { firstMs: 50, chunks: 5, gapMs: 10 } })).body.text()));
  leave.abort();
  await Promise.allSettled(first);
  await agent.close();
  const metricsBase = proxy.metricsUrl.replace(/\/metrics$/, '');
  let entries: { ttftSeconds: number; inFlightAtStart: number }[] = [];
  for (let i = 0; i < 50 && entries.length < 10; i++) {
    const res = await request(`${metricsBase}/debug/requests?model=fake-model-2`);
    const doc = (await res.body.json()) as { models: { slowestTtft: { ttftSeconds: number; inFlightAtStart: number }[] }[] };
    entries = doc.models[0]?.slowestTtft ?? [];
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(entries.length, 10, JSON.stringify(entries));
  for (const e of entries) assert.ok(e.inFlightAtStart >= 13 && e.inFlightAtStart <= 24, `in flight at start ${e.inFlightAtStart}: ${JSON.stringify(entries.map((x) => x.inFlightAtStart))}`);
});
