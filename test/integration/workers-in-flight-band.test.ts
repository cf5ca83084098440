/**
 * Under --workers 2 the in_flight_le band counts the whole machine: 24 concurrent streams spread
 * over two proxy processes (about 12 each) still land in band 32, not 16.
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
  const body = (firstMs: number, gapMs: number) => JSON.stringify({ model: 'fake-model', stream: true, fake: { schedule: { firstMs, chunks: 5, gapMs } } });
  const agent = new Agent({ connections: 32 });
  const one = async (firstMs: number, gapMs: number) => {
    const res = await request(`${proxy.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: body(firstMs, gapMs), dispatcher: agent });
    await res.body.text();
  };
  await one(5, 2);
  await waitForMetrics(proxy.metricsUrl, (s) => sumSamples(s, name) === 1);
  // First tokens 300 ms in, last ones 240 ms later: every first token sees all 24 in flight,
  // and the other worker's count is at most one 20 ms batch old by then.
  await Promise.all(Array.from({ length: 24 }, () => one(300, 60)));
  await agent.close();
  const s = await waitForMetrics(proxy.metricsUrl, (x) => sumSamples(x, name) === 25, 5000);
  assert.equal(sumSamples(s, name, { in_flight_le: '1' }), 1);
  assert.equal(sumSamples(s, name, { in_flight_le: '32' }), 24, `bands: ${JSON.stringify(s.filter((x) => x.name === name).map((x) => [x.labels['in_flight_le'], x.value]))}`);
});

test('the slow-request log counts in flight at start machine-wide: 12 streams on two workers, then 12 more each see at least 13', async () => {
  const body = (firstMs: number) => JSON.stringify({ model: 'fake-model', stream: true, fake: { schedule: { firstMs, chunks: 5, gapMs: 60 } } });
  const agent = new Agent({ connections: 32 });
  const one = async (firstMs: number) => {
    const res = await request(`${proxy.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: body(firstMs), dispatcher: agent });
    await res.body.text();
  };
  // The first 12 run 300 + 240 ms; 200 ms in (their counts long reported), 12 more start, slower to their first token.
  const first = Array.from({ length: 12 }, () => one(300));
  await new Promise((r) => setTimeout(r, 200));
  await Promise.all([...first, ...Array.from({ length: 12 }, () => one(450))]);
  await agent.close();
  const metricsBase = proxy.metricsUrl.replace(/\/metrics$/, '');
  let entries: { ttftSeconds: number; inFlightAtStart: number }[] = [];
  for (let i = 0; i < 50 && entries.filter((e) => e.ttftSeconds >= 0.45).length < 10; i++) {
    const res = await request(`${metricsBase}/debug/requests?model=fake-model`);
    const doc = (await res.body.json()) as { models: { slowestTtft: { ttftSeconds: number; inFlightAtStart: number }[] }[] };
    entries = doc.models[0]?.slowestTtft ?? [];
    await new Promise((r) => setTimeout(r, 100));
  }
  const late = entries.filter((e) => e.ttftSeconds >= 0.45);
  assert.equal(late.length, 10, JSON.stringify(entries));
  for (const e of late) assert.ok(e.inFlightAtStart >= 13 && e.inFlightAtStart <= 24, `in flight at start ${e.inFlightAtStart}: ${JSON.stringify(late.map((x) => x.inFlightAtStart))}`);
});
