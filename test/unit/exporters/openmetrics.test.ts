/** The OpenMetrics text exposition (src/exporters/prometheus/openmetrics.ts): names, types, units, escaping, exemplars. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Counter, Gauge, Registry } from 'prom-client';
import { renderOpenMetrics } from '../../../src/exporters/prometheus/openmetrics.js';
import { SeriesHistogram } from '../../../src/metrics/histogram.js';
import { SeriesCounter } from '../../../src/metrics/counter.js';

test('counters keep their sample names, units are declared, values and help are escaped, exemplars ride on buckets', async () => {
  const reg = new Registry();
  new SeriesCounter('x_requests_total', 'Requests "quoted"\nsecond line', ['outcome'], reg).inc({ outcome: 'o\\k' }, 2);
  new Counter({ name: 'x_oddly_named', help: 'no _total', registers: [reg] }).inc(3);
  new Gauge({ name: 'x_temperature_celsius', help: 'temp', registers: [reg] }).set(41.5);
  const h = new SeriesHistogram('x_latency_seconds', 'latency', ['model'], [0.1, 1], reg);
  h.labels({ model: 'm' }).observeTraced(0.5, 'ab'.repeat(16), 1700000000.1234);
  h.labels({ model: 'm' }).observe(0.05);
  const text = await renderOpenMetrics(reg);
  assert.equal(text, [
    '# TYPE x_requests counter',
    '# HELP x_requests Requests \\"quoted\\"\\nsecond line',
    'x_requests_total{outcome="o\\\\k"} 2',
    '# TYPE x_oddly_named unknown',
    '# HELP x_oddly_named no _total',
    'x_oddly_named 3',
    '# TYPE x_temperature_celsius gauge',
    '# UNIT x_temperature_celsius celsius',
    '# HELP x_temperature_celsius temp',
    'x_temperature_celsius 41.5',
    '# TYPE x_latency_seconds histogram',
    '# UNIT x_latency_seconds seconds',
    '# HELP x_latency_seconds latency',
    'x_latency_seconds_bucket{le="0.1",model="m"} 1',
    `x_latency_seconds_bucket{le="1",model="m"} 2 # {trace_id="${'ab'.repeat(16)}"} 0.5 1700000000.123`,
    'x_latency_seconds_bucket{le="+Inf",model="m"} 2',
    'x_latency_seconds_sum{model="m"} 0.55',
    'x_latency_seconds_count{model="m"} 2',
    '# EOF',
    '',
  ].join('\n'));
  // The 0.0.4 text of the same registry carries no exemplar and keeps prom-client's shape.
  const plain = await reg.metrics();
  assert.ok(!plain.includes('trace_id') && plain.includes('x_requests_total{outcome="o\\\\k"} 2') && plain.includes('# TYPE x_oddly_named counter'));
});

test('the protobuf exposition carries the same exemplars: on the classic bucket and on the native histogram', async () => {
  const { RequestMetrics } = await import('../../../src/metrics/prometheus.js');
  const { DEFAULT_BUCKETS } = await import('../../../src/lib/metric-def.js');
  const { UNMEASURED } = await import('../../../src/record/record.js');
  const { encodeRegistry, decodeMetricFamilies } = await import('../../../src/exporters/prometheus/proto.js');
  const reg = new Registry();
  const { judgeBatch } = await import('../../../src/metrics/batch.js');
  const slos = { objective: 0.99, window: '30d', default: {}, models: {}, promptClasses: [] } as never;
  const m = new RequestMetrics(reg, DEFAULT_BUCKETS as never, 'vllm', slos, undefined, { keepBreaches: false });
  const trace = 'cd'.repeat(16);
  const base = { ...UNMEASURED, route: 'chat_completions', operation: 'chat', model: 'm', outcome: 'ok', status: 200, streamed: true, errorType: null, startedAt: 1_700_000_000_000, ttft: 0.3, ttfo: 0.3, e2e: 2, outputTokens: 5, tokenSource: 'usage' } as const;
  m.ingest(judgeBatch([
    { ...base, traceId: trace, spanId: 'ef'.repeat(8), traceFlags: 1 },
    { ...base, ttft: 0.31, traceId: 'aa'.repeat(16), spanId: 'ef'.repeat(8), traceFlags: 0 }, // unsampled: no exemplar
  ], 0, slos, (x) => x));
  const fam = decodeMetricFamilies(await encodeRegistry(reg)).find((f) => f.name === 'gen_ai_server_time_to_first_token_seconds')!;
  const h = fam.metric[0]!.histogram as unknown as { bucket: { upper_bound: number; exemplar?: { label: { name: string; value: string }[]; value: number; timestamp: { seconds: number } } }[]; exemplars?: { label: { value: string }[] }[] };
  const withExemplar = h.bucket.filter((b) => b.exemplar);
  assert.equal(withExemplar.length, 1);
  assert.ok(withExemplar[0]!.upper_bound >= 0.3);
  assert.deepEqual(withExemplar[0]!.exemplar!.label, [{ name: 'trace_id', value: trace }]);
  assert.equal(withExemplar[0]!.exemplar!.value, 0.3);
  assert.equal(withExemplar[0]!.exemplar!.timestamp.seconds, 1_700_000_002);
  assert.deepEqual(h.exemplars!.map((e) => e.label[0]!.value), [trace]);
});
