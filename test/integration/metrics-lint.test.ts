/** /metrics after mixed traffic passes `promtool check metrics` with no finding at all. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { rawPost, scrape, sumSamples, waitForMetrics, proxyOverFakeUpstream } from '../helpers.js';

const env = proxyOverFakeUpstream();

test('promtool check metrics: clean', async () => {
  await rawPost(`${env.proxy.url}/v1/chat/completions`, { model: 'fake-model', stream: true, fake: { schedule: { firstMs: 1, chunks: 5, gapMs: 1 } } });
  await rawPost(`${env.proxy.url}/v1/completions`, { model: 'x', stream: false, fake: { status: { code: 400, body: '{}' } } });
  await rawPost(`${env.proxy.url}/v1/chat/completions`, 'not json');
  await waitForMetrics(env.proxy.metricsUrl, (s) => sumSamples(s, 'infermeter_requests_total') === 3);
  const { text } = await scrape(env.proxy.metricsUrl);
  const r = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
  assert.equal(r.error, undefined, 'promtool is installed (Debian package prometheus)');
  assert.equal(r.status, 0, `promtool findings:\n${r.stdout}${r.stderr}`);
});

test('the proxy port serves only proxied traffic; /metrics lives on its own listener', async () => {
  const res = await rawPost(`${env.proxy.url}/metrics`, '');
  const seen = env.upstream.events.filter((e) => e.path === '/metrics');
  assert.equal(seen.length, 1, '/metrics on the proxy port is forwarded to the upstream, not answered by infermeter');
  assert.ok(!res.body.toString().includes('infermeter_requests_total'));
});
