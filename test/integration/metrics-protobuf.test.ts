/**
 * /metrics content negotiation: a scraper that asks for the protobuf exposition gets
 * length-delimited MetricFamily messages that decode with the schema file
 * (schemas/prometheus/metrics.proto) and say what the text answer says, every metric type
 * included (counter, gauge, classic+native histogram, an info gauge), labels and help kept;
 * the text answer is unchanged for everyone else.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { decodeMetricFamilies, PROTOBUF_CONTENT_TYPE } from '../../src/exporters/prometheus/proto.js';
import { bucketsOf } from '../../src/metrics/native.js';
import { parsePrometheusText } from '../../src/lib/prom-text.js';
import { proxyOverFakeUpstream, rawPost, sumSamples, waitForMetrics } from '../helpers.js';
import { FAKE_NVIDIA_SMI } from '../fakes/gpu.js';

// The model allowlist makes the label certain from the first request (the upstream's list loads asynchronously).
const env = proxyOverFakeUpstream({ collectorGpu: 'true', nvidiaSmi: FAKE_NVIDIA_SMI, gpuInterval: '1s', models: 'fake-model,fake-model-2' });
/** What Prometheus 2.42 sends with --enable-feature=native-histograms. */
const PROMETHEUS_NATIVE_ACCEPT = 'application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7,text/plain;version=0.0.4;q=0.3,*/*;q=0.2';

interface Pair { name: string; value: string }
interface DecodedMetric {
  label?: Pair[];
  counter?: { value: number };
  gauge?: { value: number };
  histogram?: {
    sample_count: number; sample_sum: number; bucket?: { upper_bound: number; cumulative_count: number }[];
    schema?: number; zero_threshold?: number; zero_count?: number;
    positive_span?: { offset: number; length: number }[]; positive_delta?: number[];
  };
}
interface DecodedFamily { name: string; help: string; type: string; metric: DecodedMetric[] }

/** The answer decoded with the schema file (this file's field types: every asserted field present). */
const decodeAll = (body: Uint8Array): DecodedFamily[] => decodeMetricFamilies(body) as unknown as DecodedFamily[];

const labelsOf = (m: DecodedMetric) => Object.fromEntries((m.label ?? []).map((p) => [p.name, p.value]));

test('protobuf answer: every family of the text answer, same type, help, labels and values; native buckets beside classic', async () => {
  for (const firstMs of [5, 20, 80]) {
    await rawPost(`${env.proxy.url}/v1/chat/completions`, { model: 'fake-model', stream: true, fake: { schedule: { firstMs, chunks: 4, gapMs: 3 } } });
  }
  await waitForMetrics(env.proxy.metricsUrl, (s) => sumSamples(s, 'infermeter_requests_total') === 3 && s.some((x) => x.name === 'infermeter_gpu_info'), 10_000);

  // The GPU collector runs every second, so its gauges and timestamps may move between two
  // scrapes: compare a protobuf answer only with a text answer that was the same before and
  // after it (nothing moved in between), like with like.
  const scrapeText = async () => (await request(env.proxy.metricsUrl)).body.text();
  let text = '';
  let families: DecodedFamily[] = [];
  for (let attempt = 0; ; attempt++) {
    const before = await scrapeText();
    const res = await request(env.proxy.metricsUrl, { headers: { accept: PROMETHEUS_NATIVE_ACCEPT } });
    assert.equal(res.headers['content-type'], PROTOBUF_CONTENT_TYPE);
    const body = new Uint8Array(await res.body.arrayBuffer());
    if ((await scrapeText()) === before) {
      [text, families] = [before, decodeAll(body)];
      break;
    }
    assert.ok(attempt < 20, 'the text answer stayed the same across one protobuf answer in 20 tries');
  }
  const byName = new Map(families.map((f) => [f.name, f]));

  const parsed = parsePrometheusText(text);
  const help = new Map([...text.matchAll(/^# HELP (\S+) (.*)$/gm)].map((m) => [m[1]!, m[2]!.replace(/\\n/g, '\n').replace(/\\\\/g, '\\')]));
  assert.deepEqual([...byName.keys()].sort(), [...parsed.types.keys()].sort(), 'the same families');
  for (const [name, type] of parsed.types) {
    const f = byName.get(name)!;
    assert.equal(f.type, type.toUpperCase(), name);
    assert.equal(f.help, help.get(name), `${name} help`);
  }

  // Counters and gauges (the GPU info gauge among them): every sample, labels and value.
  for (const f of families.filter((x) => x.type === 'COUNTER' || x.type === 'GAUGE')) {
    const samples = parsed.samples.filter((s) => s.name === f.name);
    assert.equal(f.metric.length, samples.length, `${f.name}: ${JSON.stringify(f.metric.map(labelsOf))} vs ${JSON.stringify(samples.map((x) => x.labels))}`);
    for (const m of f.metric) {
      const labels = labelsOf(m);
      const s = samples.find((x) => JSON.stringify(Object.entries(x.labels).sort()) === JSON.stringify(Object.entries(labels).sort()));
      assert.ok(s, `${f.name} ${JSON.stringify(labels)} in the text answer`);
      const v = f.type === 'COUNTER' ? m.counter!.value : m.gauge!.value;
      assert.ok(Object.is(v, s.value) || (Number.isNaN(v) && Number.isNaN(s.value)), `${f.name} ${JSON.stringify(labels)}: ${v} vs ${s.value}`);
    }
  }
  const info = byName.get('infermeter_gpu_info')!;
  assert.equal(info.type, 'GAUGE');
  assert.ok(info.metric.every((m) => m.gauge!.value === 1 && labelsOf(m)['uuid']?.startsWith('GPU-')), 'info: value 1, labels carried');

  // The TTFT histogram: classic buckets as in text, native buckets that hold the same observations.
  const ttft = byName.get('gen_ai_server_time_to_first_token_seconds')!;
  assert.equal(ttft.metric.length, 1);
  const h = ttft.metric[0]!.histogram!;
  const sel = { gen_ai_request_model: 'fake-model' };
  assert.equal(h.sample_count, 3);
  assert.equal(h.sample_sum, sumSamples(parsed.samples, 'gen_ai_server_time_to_first_token_seconds_sum', sel));
  for (const b of h.bucket!) {
    assert.equal(b.cumulative_count, sumSamples(parsed.samples, 'gen_ai_server_time_to_first_token_seconds_bucket', { ...sel, le: String(b.upper_bound) }), `le ${b.upper_bound}`);
  }
  assert.equal(h.schema, 3);
  assert.equal(h.zero_threshold, 2 ** -128);
  const native = bucketsOf(h.positive_span!, h.positive_delta!);
  assert.equal([...native.values()].reduce((a, b) => a + b, 0) + (h.zero_count ?? 0), 3);
  // Each native bucket (upper bound 2^(i/8)) agrees with the classic cumulative counts.
  for (const b of h.bucket!) {
    const nativeBelow = [...native].filter(([i]) => 2 ** (i / 8) <= b.upper_bound).reduce((a, [, c]) => a + c, 0);
    const nativeAbove = [...native].filter(([i]) => 2 ** ((i - 1) / 8) >= b.upper_bound).reduce((a, [, c]) => a + c, 0);
    assert.ok(nativeBelow <= b.cumulative_count && b.cumulative_count <= 3 - nativeAbove, `le ${b.upper_bound}`);
  }
  for (const name of ['infermeter_time_to_first_output_seconds', 'gen_ai_server_time_per_output_token_seconds', 'gen_ai_server_request_duration_seconds', 'infermeter_inter_chunk_latency_seconds']) {
    const m = byName.get(name)!.metric[0]!.histogram!;
    assert.equal(m.schema, 3, `${name} is native too`);
    const total = [...bucketsOf(m.positive_span!, m.positive_delta!).values()].reduce((a, b) => a + b, 0) + (m.zero_count ?? 0);
    assert.equal(total, m.sample_count, `${name}: native buckets hold every observation`);
  }
  const tokens = byName.get('gen_ai_client_token_usage')!.metric[0]!.histogram!;
  assert.equal(tokens.schema, undefined, 'token counts stay classic only');
  assert.ok(tokens.bucket!.length > 0);
});

test('text answer unchanged without the protobuf or OpenMetrics Accept (no header, text, */*)', async () => {
  const plain = await request(env.proxy.metricsUrl);
  assert.match(String(plain.headers['content-type']), /^text\/plain; version=0\.0\.4/);
  const body = await plain.body.text();
  for (const accept of ['text/plain;version=0.0.4', '*/*', 'application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=text']) {
    const res = await request(env.proxy.metricsUrl, { headers: { accept } });
    assert.match(String(res.headers['content-type']), /^text\/plain/, accept);
    const again = await res.body.text();
    assert.equal(again.split('\n').filter((l) => l.startsWith('#')).join('\n'), body.split('\n').filter((l) => l.startsWith('#')).join('\n'), accept);
  }
});

test('an OpenMetrics-first scraper (Prometheus 2.x and 3.x) gets OpenMetrics with the same samples as the text', async () => {
  const samples = (text: string) => text.split('\n').filter((l) => l && !l.startsWith('#')).map((l) => l.replace(/ # \{.*$/, '')).filter((l) => !l.startsWith('infermeter_proxy_')).sort();
  // Against a text answer that was the same before and after it: the GPU collector's
  // once-a-second gauges may move between two scrapes (they did once, under load).
  const scrapeText = async () => samples(await (await request(env.proxy.metricsUrl)).body.text());
  for (let attempt = 0; ; attempt++) {
    const before = await scrapeText();
    const res = await request(env.proxy.metricsUrl, { headers: { accept: 'application/openmetrics-text;version=1.0.0;q=0.9,text/plain;version=0.0.4;q=0.5,*/*;q=0.1' } });
    assert.match(String(res.headers['content-type']), /^application\/openmetrics-text; version=1\.0\.0/);
    const om = await res.body.text();
    assert.ok(om.endsWith('\n# EOF\n'));
    if (JSON.stringify(await scrapeText()) === JSON.stringify(before)) {
      assert.deepEqual(samples(om), before);
      break;
    }
    assert.ok(attempt < 20, 'the text answer stayed the same across one OpenMetrics answer in 20 tries');
  }
});

test('--native-histogram-bucket-factor reaches the recorded series: factor 2 gives schema 0', async () => {
  const { startProxy } = await import('../helpers.js');
  const own = await startProxy({ upstream: env.upstream.url, models: 'fake-model', nativeHistogramBucketFactor: '2' });
  try {
    await rawPost(`${own.url}/v1/chat/completions`, { model: 'fake-model', stream: true, fake: { schedule: { firstMs: 5, chunks: 4, gapMs: 3 } } });
    await waitForMetrics(own.metricsUrl, (s) => sumSamples(s, 'gen_ai_server_time_to_first_token_seconds_count') === 1);
    const res = await request(own.metricsUrl, { headers: { accept: PROMETHEUS_NATIVE_ACCEPT } });
    const ttft = decodeAll(new Uint8Array(await res.body.arrayBuffer())).find((f) => f.name === 'gen_ai_server_time_to_first_token_seconds')!;
    assert.equal(ttft.metric[0]!.histogram!.schema, 0);
  } finally {
    await own.close();
  }
});
