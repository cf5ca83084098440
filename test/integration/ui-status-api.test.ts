/**
 * GET /api/v1/status against a real infermeter (fake upstream, fake nvidia-smi, a fake
 * engine /metrics): every response validates against schemas/status.schema.json, its
 * figures agree with /metrics, `since` returns only new points, bad input is refused with
 * a reason, a marker sent in prompts and Authorization headers appears nowhere, and
 * --ui=false takes the page and the endpoint away.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { scrape, startProxy, sumSamples, type TestProxy } from '../helpers.js';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.js';
import { startFakeEngine, type FakeEngine } from '../fakes/engine-metrics-server.js';
import { FAKE_NVIDIA_SMI } from '../fakes/gpu.js';
import { chat, metricsBase, status, statusValidator, statusWhen } from './ui-helpers.js';
import type { StatusDocument } from '../../src/exporters/ui/status-json.js';

const MARKER = 'ui-secret-marker-7f3a9c';
const ENGINE_TEXT = [
  '# TYPE vllm:num_requests_running gauge', 'vllm:num_requests_running{engine="0"} 3',
  '# TYPE vllm:num_requests_waiting gauge', 'vllm:num_requests_waiting{engine="0"} 1',
  '# TYPE vllm:kv_cache_usage_perc gauge', 'vllm:kv_cache_usage_perc{engine="0"} 0.42',
  '# TYPE vllm:num_preemptions_total counter', 'vllm:num_preemptions_total{engine="0"} 5',
  '',
].join('\n');

let upstream: FakeUpstream;
let engine: FakeEngine;
let proxy: TestProxy;
let base: string;
let dir: string;
const validate = statusValidator();

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ui-api-'));
  const config = join(dir, 'infermeter.yaml');
  writeFileSync(config, 'slos:\n  objective: 0.99\n  default:\n    ttft: 500ms\n    tpot: 100ms\n  models:\n    fake-model-2:\n      ttft: 50ms\n');
  upstream = await startFakeUpstream();
  engine = await startFakeEngine({ body: ENGINE_TEXT });
  process.env['FAKE_NVIDIA_SMI_GPUS'] = '2';
  proxy = await startProxy({
    upstream: upstream.url, config, nvidiaSmi: FAKE_NVIDIA_SMI, collectorGpu: 'true', gpuSource: 'nvidia-smi',
    collectorEngine: 'true', engineMetrics: engine.url, engineInterval: '0.5s',
  });
  base = metricsBase(proxy.metricsUrl);
  const secret = { prompt: `tell me ${MARKER}`, headers: { authorization: `Bearer ${MARKER}` } };
  for (let i = 0; i < 6; i++) await chat(proxy.url, 'fake-model', { firstMs: 120, chunks: 6, gapMs: 15 }, secret);
  for (let i = 0; i < 3; i++) await chat(proxy.url, 'fake-model-2', { firstMs: 120, chunks: 4, gapMs: 10 }, secret);
});

after(async () => {
  await proxy.close();
  await engine.close();
  await upstream.close();
  rmSync(dir, { recursive: true, force: true });
});

test('the status JSON validates against its schema and agrees with /metrics', { timeout: 30_000 }, async () => {
  // Every request's record, not just the first of each model (the last batch may still be on its way).
  const doc = await statusWhen(base, (d) => d.models.length === 2 && d.models.find((m) => m.model === 'fake-model')?.ttft.count === 6 && d.models.find((m) => m.model === 'fake-model-2')?.ttft.count === 3
    && d.gpus.length === 2 && d.engine?.kvCacheUsage != null && d.collectors.some((c) => c.name === 'gpu' && c.up));
  assert.ok(validate(doc), JSON.stringify(validate.errors, null, 1));
  const { samples } = await scrape(proxy.metricsUrl);
  const [busy, strict] = [doc.models.find((m) => m.model === 'fake-model')!, doc.models.find((m) => m.model === 'fake-model-2')!];
  // Each request's own TTFT, from the slow-request log (all 9 kept): what the percentiles and the
  // SLO verdicts must agree with, whatever this machine's load made of the upstream's 120 ms.
  const slow = doc.slowRequests!;
  const ttftsOf = (model: string) => slow.filter((r) => r.model === model).map((r) => r.ttft!);
  assert.equal(doc.models[0]!.model, 'fake-model', 'busiest first');
  for (const [m, n] of [[busy, 6], [strict, 3]] as const) {
    const labels = { gen_ai_request_model: m.model };
    assert.equal(m.ttft.count, n);
    assert.equal(m.ttft.count, sumSamples(samples, 'gen_ai_server_time_to_first_token_seconds_count', labels));
    const ttftMean = sumSamples(samples, 'gen_ai_server_time_to_first_token_seconds_sum', labels) / n;
    const tpotMean = sumSamples(samples, 'gen_ai_server_time_per_output_token_seconds_sum', labels) / n;
    // The JSON rounds to 4 significant digits.
    assert.ok(Math.abs(m.ttft.mean! - ttftMean) <= ttftMean * 1e-3, `TTFT mean ${m.ttft.mean} vs /metrics ${ttftMean}`);
    assert.ok(Math.abs(m.tpot.mean! - tpotMean) <= tpotMean * 1e-3, `TPOT mean ${m.tpot.mean} vs /metrics ${tpotMean}`);
    // The upstream waits 120 ms; the window's largest TTFT is its P99 (6 and 3 requests).
    assert.ok(m.ttft.p50! >= 0.12, `TTFT ${JSON.stringify(m.ttft)}`);
    assert.ok(Math.abs(m.ttft.p99! - Math.max(...ttftsOf(m.model))) <= m.ttft.p99! * 1e-3, `TTFT P99 ${m.ttft.p99} vs the slowest request's ${Math.max(...ttftsOf(m.model))}`);
    assert.ok(m.ttft.p50! <= m.ttft.p95! && m.ttft.p95! <= m.ttft.p99!);
    assert.deepEqual(m.outcomes5m, { ok: n });
  }
  // fake-model's requests met the default 500 ms TTFT unless the machine made them slower (each
  // judged on its own TTFT); fake-model-2's 50 ms TTFT was missed by every one of its requests.
  const slo = (m: typeof busy, name: string) => m.slos.find((s) => s.slo === name)!;
  const met = ttftsOf('fake-model').filter((t) => t <= 0.5).length / 6;
  assert.ok(Math.abs(slo(busy, 'ttft').attainment5m! - met) < 1e-3, `attainment ${slo(busy, 'ttft').attainment5m}, requests within 500 ms ${met}`);
  assert.ok(Math.abs(slo(busy, 'ttft').burnRate1h! - (1 - met) / 0.01) < 0.1, `burn rate ${slo(busy, 'ttft').burnRate1h}`);
  assert.equal(slo(strict, 'ttft').thresholdSeconds, 0.05);
  assert.equal(slo(strict, 'ttft').attainment5m, 0);
  assert.equal(slo(strict, 'ttft').burnRate5m, 100, 'all bad with a 1% budget: 100× burn');
  assert.equal(slo(strict, 'ttft').judged1h, 3);
  // The collectors' figures, as /metrics shows them (the page reads them from the machine snapshot).
  for (const g of doc.gpus) {
    assert.ok(samples.some((x) => x.name === 'infermeter_gpu_sm_utilization_ratio' && x.labels['gpu'] === g.gpu), `GPU ${g.gpu} in /metrics`);
    assert.ok(g.utilization! >= 0 && g.utilization! <= 1, JSON.stringify(g));
    assert.ok(g.memoryTotalBytes! > 0 && g.powerWatts! > 0 && g.name, JSON.stringify(g));
  }
  assert.deepEqual({ kv: doc.engine!.kvCacheUsage, running: doc.engine!.running, waiting: doc.engine!.waiting }, { kv: 0.42, running: 3, waiting: 1 });
  assert.ok(doc.collectors.find((c) => c.name === 'engine')!.up);
  // Series: every array as long as `points`, per-second points with the SLO thresholds of the charted model.
  const s = doc.series;
  assert.equal(s.model, '*');
  for (const a of [s.requestsPerSecond, s.outputTokensPerSecond, s.ttft.p50, s.ttft.p99, s.tpot.p95, s.inFlight, s.kvCacheUsage, ...Object.values(s.gpuUtilization)]) assert.equal(a.length, s.points);
  assert.equal(s.requestsPerSecond.reduce<number>((a, v) => a + (v ?? 0), 0), 9, 'every request in some second');
  assert.deepEqual(Object.keys(s.gpuUtilization).sort(), ['0', '1']);
  // The slow-request table comes from the slow-request log (/debug/requests): 9 requests, each kept (10 per list), slowest TTFT first.
  assert.equal(slow.length, 9, JSON.stringify(slow));
  assert.deepEqual(slow.map((r) => r.model).sort(), [...Array(6).fill('fake-model'), ...Array(3).fill('fake-model-2')]);
  for (let i = 1; i < slow.length; i++) assert.ok(slow[i - 1]!.ttft! >= slow[i]!.ttft!, 'slowest TTFT first');
  assert.ok(slow.every((r) => r.outcome === 'ok' && r.ttft! >= 0.11 && r.outputTokens! > 0), JSON.stringify(slow));
});

test('?model= charts one model; ?since= returns only the points after it', { timeout: 20_000 }, async () => {
  const one = (await status(base, '?model=fake-model-2')).doc;
  assert.ok(validate(one), JSON.stringify(validate.errors));
  assert.equal(one.series.model, 'fake-model-2');
  assert.equal(one.series.thresholds.ttft, 0.05);
  assert.equal(one.series.requestsPerSecond.reduce<number>((a, v) => a + (v ?? 0), 0), 3);
  const unknown = (await status(base, `?model=${encodeURIComponent('<script>x</script>')}`));
  assert.equal(unknown.doc.series.model, '*', 'an unknown model falls back to all');
  assert.ok(!unknown.text.includes('<script>'), 'nothing from the query is echoed');
  const lastOf = (d: typeof one) => d.series.start + (d.series.points - 1) * 1000;
  const full = (await status(base)).doc;
  const lastPoint = lastOf(full);
  // Points close once a second: wait for the next one to close (an event, not a sleep), then
  // compare the ?since= answer with the whole chart read right after it. Closed points never
  // change, so the answer must be exactly the chart's points after lastPoint, up to its own last.
  await statusWhen(base, (d) => lastOf(d) > lastPoint, 10_000);
  const inc = (await status(base, `?since=${lastPoint}`)).doc;
  const chart = (await status(base)).doc;
  assert.ok(validate(inc), JSON.stringify(validate.errors));
  assert.equal(inc.series.start, lastPoint + 1000, 'continues right after the last point held');
  assert.ok(inc.series.points >= 1 && lastOf(inc) <= lastOf(chart), `${inc.series.points} new points, the chart at ${lastOf(chart)}`);
  const offset = (inc.series.start - chart.series.start) / 1000;
  assert.deepEqual(inc.series.requestsPerSecond, chart.series.requestsPerSecond.slice(offset, offset + inc.series.points), 'the points after since, as the whole chart has them');
});

test('bad input is refused with a reason; the endpoint is read-only', async () => {
  const bad = await request(`${base}/api/v1/status?since=yesterday`);
  assert.equal(bad.statusCode, 400);
  assert.match(await bad.body.text(), /since: expected Unix milliseconds/);
  const post = await request(`${base}/api/v1/status`, { method: 'POST', body: '{}' });
  await post.body.dump();
  assert.equal(post.statusCode, 405);
  const head = await request(`${base}/ui`, { method: 'HEAD' });
  assert.equal(head.statusCode, 200);
  assert.equal((await head.body.text()).length, 0);
  assert.match(String(head.headers['content-security-policy']), /default-src 'none'; script-src 'self'/);
});

test('a marker sent in prompts and Authorization headers appears in no page, asset or JSON', async () => {
  for (const path of ['/', '/ui', '/ui/app.js', '/ui/app.css', '/ui/uplot.js', '/ui/uplot.css', '/api/v1/status', '/api/v1/status?model=fake-model', '/metrics']) {
    const res = await request(`${base}${path}`);
    const body = await res.body.text();
    assert.equal(res.statusCode, 200, path);
    assert.ok(!body.includes(MARKER), `${path} contains the marker`);
    assert.ok(!body.includes('Bearer'), `${path} contains an Authorization value`);
  }
});

test('--ui=false: no page, no assets, no endpoint; /metrics as before', async () => {
  const off = await startProxy({ upstream: upstream.url, ui: 'false' });
  try {
    const b = metricsBase(off.metricsUrl);
    for (const path of ['/', '/ui', '/ui/app.js', '/api/v1/status']) {
      const res = await request(`${b}${path}`);
      await res.body.dump();
      assert.equal(res.statusCode, 404, path);
    }
    const m = await request(off.metricsUrl);
    await m.body.dump();
    assert.equal(m.statusCode, 200);
  } finally {
    await off.close();
  }
});

test('per model in flight: the streams still running, counted from the proxy, back to 0 when they end', { timeout: 20_000 }, async () => {
  const before = (await status(base)).doc;
  assert.ok(before.models.every((m) => m.inFlight === 0), JSON.stringify(before.models.map((m) => [m.model, m.inFlight])));
  // The streams wait at the upstream until the page has counted them (a gate, not 1.5 s that a
  // busy machine could use up before the count reaches the page).
  const slow = [0, 1, 2].map(() => chat(proxy.url, 'fake-model-2', { firstMs: 5, chunks: 2, gapMs: 10 }, { gate: 'in-flight' }));
  const one = chat(proxy.url, 'fake-model', { firstMs: 5, chunks: 2, gapMs: 10 }, { gate: 'in-flight' });
  const inFlight = (d: StatusDocument, model: string) => d.models.find((m) => m.model === model)?.inFlight;
  const during = await statusWhen(base, (d) => inFlight(d, 'fake-model-2') === 3 && inFlight(d, 'fake-model') === 1);
  assert.ok(validate(during), JSON.stringify(validate.errors));
  assert.equal(during.inFlight, 4, 'the machine-wide figure agrees');
  upstream.release('in-flight');
  await Promise.all([...slow, one]);
  const afterwards = await statusWhen(base, (d) => d.models.every((m) => m.inFlight === 0));
  assert.equal(afterwards.inFlight, 0);
});
