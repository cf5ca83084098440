/** /metrics after mixed traffic passes `promtool check metrics` with no finding at all. */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.js';
import { rawPost, scrape, startProxy, sumSamples, waitForMetrics, type TestProxy } from '../helpers.js';

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

test('promtool check metrics: clean', async () => {
  await rawPost(`${proxy.url}/v1/chat/completions`, { model: 'fake-model', stream: true, fake: { schedule: { firstMs: 1, chunks: 5, gapMs: 1 } } });
  await rawPost(`${proxy.url}/v1/completions`, { model: 'x', stream: false, fake: { status: { code: 400, body: '{}' } } });
  await rawPost(`${proxy.url}/v1/chat/completions`, 'not json');
  await waitForMetrics(proxy.metricsUrl, (s) => sumSamples(s, 'infermeter_requests_total') === 3);
  const { text } = await scrape(proxy.metricsUrl);
  const r = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
  assert.equal(r.error, undefined, 'promtool is installed (Debian package prometheus)');
  assert.equal(r.status, 0, `promtool findings:\n${r.stdout}${r.stderr}`);
});

test('the proxy port serves only proxied traffic; /metrics lives on its own listener', async () => {
  const res = await rawPost(`${proxy.url}/metrics`, '');
  const seen = upstream.events.filter((e) => e.path === '/metrics');
  assert.equal(seen.length, 1, '/metrics on the proxy port is forwarded to the upstream, not answered by infermeter');
  assert.ok(!res.body.toString().includes('infermeter_requests_total'));
});
