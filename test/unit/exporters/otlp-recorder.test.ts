/**
 * The OTLP recorder and the Prometheus side, fed the same records, agree on every count;
 * OTLP adds error.type (semantic conventions) on failed requests.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { AggregationTemporality, DataPointType, InMemoryMetricExporter, type MetricData } from '@opentelemetry/sdk-metrics';
import { pino } from 'pino';
import { resolveConfig } from '../../../src/config.js';
import { RequestMetrics } from '../../../src/metrics/prometheus.js';
import { judgeBatch } from '../../../src/metrics/batch.js';
import { OtlpRecorder } from '../../../src/exporters/otlp/otlp.js';
import { ReportingExporter } from '../../../src/exporters/otlp/export.js';
import { UNMEASURED, type RequestRecord } from '../../../src/record/record.js';
import { parseSloConfig } from '../../../src/slo/config.js';
import { parsePrometheusText, sumSamples } from '../../../src/lib/prom-text.js';

function record(over: Partial<RequestRecord>): RequestRecord {
  return {
    ...UNMEASURED, startedAt: Date.now(),
    route: 'chat_completions', operation: 'chat', model: 'm1', outcome: 'ok', status: 200, streamed: true,
    ttft: 0.05, ttfo: 0.06, e2e: 0.5, inputTokens: 10, outputTokens: 5, tokenSource: 'usage',
    chunkGaps: Float32Array.from([0.1, 0.1, 0.1, 0.1]), meteringFailure: null, errorType: null, ...over,
  };
}

const RECORDS: RequestRecord[] = [
  record({}),
  record({ ttft: 2, ttfo: 2, e2e: 3 }),
  record({ model: 'unknown-model' }),
  record({ streamed: false, ttft: -1, ttfo: -1, chunkGaps: null }),
  record({ operation: 'text_completion', route: 'completions', outputTokens: 1 }),
  record({ outcome: 'upstream_error', status: 500, errorType: '500', e2e: 0.02, ttft: -1, ttfo: -1, outputTokens: 0, chunkGaps: null }),
  record({ outcome: 'stream_error', errorType: 'stream_error', outputTokens: 3 }),
  record({ outcome: 'client_abort', e2e: -1, errorType: null, outputTokens: 2 }),
  record({ meteringFailure: 'invalid_json', tokenSource: 'none', outputTokens: 0 }),
  record({ route: 'embeddings', operation: 'embeddings', streamed: false }),
  // Messages and Responses are chat operations too: only `api` tells their latencies apart.
  record({ route: 'messages', ttft: 0.3, ttfo: 0.3, e2e: 0.9 }),
  record({ route: 'responses', ttft: 0.2, ttfo: 0.25, e2e: 0.7 }),
  record({ route: 'messages', outcome: 'upstream_error', status: 529, errorType: '529', e2e: 0.01, ttft: -1, ttfo: -1, outputTokens: 0, chunkGaps: null }),
];

async function both() {
  const config = resolveConfig({ upstream: 'http://127.0.0.1:8000' }, {});
  config.slos = parseSloConfig({ default: { ttft: '1s', e2e: '2s' } }, 'test');
  const modelLabel = (m: string) => (m === 'm1' ? m : 'other');
  const registry = new Registry();
  const prom = new RequestMetrics(registry, config.buckets, config.engine, config.slos);
  const memory = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const exporter = new ReportingExporter(memory, pino({ level: 'silent' }), 'memory');
  const otlp = new OtlpRecorder({ buckets: config.buckets, provider: config.engine, exporter, intervalMs: 60_000, timeoutMs: 1_000 });
  const batch = judgeBatch(RECORDS, 3, config.slos, modelLabel);
  prom.ingest(batch);
  otlp.ingest(batch);
  await otlp.flush();
  const metrics = new Map<string, MetricData>();
  for (const rm of memory.getMetrics()) for (const sm of rm.scopeMetrics) for (const m of sm.metrics) metrics.set(m.descriptor.name, m);
  const { samples } = parsePrometheusText(await registry.metrics());
  await otlp.shutdown();
  return { metrics, samples, exporter };
}

type Attrs = Record<string, unknown>;
function total(m: MetricData | undefined, match: Attrs = {}): number {
  assert.ok(m);
  let n = 0;
  for (const p of m.dataPoints) {
    if (!Object.entries(match).every(([k, v]) => p.attributes[k] === v)) continue;
    n += m.dataPointType === DataPointType.HISTOGRAM ? (p.value as { count: number }).count : (p.value as number);
  }
  return n;
}

test('same records, same counts on both exports', async () => {
  const { metrics, samples, exporter } = await both();
  assert.ok(exporter.exportsSucceeded >= 1);
  assert.equal(exporter.exportsFailed, 0);
  const pairs: [string, string, Attrs, Record<string, string>][] = [
    ['infermeter.requests', 'infermeter_requests_total', {}, {}],
    ['infermeter.requests', 'infermeter_requests_total', { outcome: 'ok', 'gen_ai.request.model': 'other' }, { outcome: 'ok', gen_ai_request_model: 'other' }],
    ['infermeter.tokens', 'infermeter_tokens_total', { 'gen_ai.token.type': 'output' }, { gen_ai_token_type: 'output' }],
    ['infermeter.output_token_source', 'infermeter_output_token_source_total', { source: 'none' }, { source: 'none' }],
    ['infermeter.metering_failures', 'infermeter_metering_failures_total', {}, {}],
    ['gen_ai.server.time_to_first_token', 'gen_ai_server_time_to_first_token_seconds_count', {}, {}],
    ['infermeter.time_to_first_output', 'infermeter_time_to_first_output_seconds_count', {}, {}],
    ['gen_ai.server.time_per_output_token', 'gen_ai_server_time_per_output_token_seconds_count', {}, {}],
    ['infermeter.inter_chunk_latency', 'infermeter_inter_chunk_latency_seconds_count', {}, {}],
    ['gen_ai.client.token.usage', 'gen_ai_client_token_usage_count', { 'gen_ai.token.type': 'input' }, { gen_ai_token_type: 'input' }],
    ['infermeter.slo_requests', 'infermeter_slo_requests_total', { result: 'bad' }, { result: 'bad' }],
    ['infermeter.goodput_requests', 'infermeter_goodput_requests_total', {}, {}],
    ['infermeter.slo_judged_requests', 'infermeter_slo_judged_requests_total', {}, {}],
  ];
  for (const [otel, prom, attrs, labels] of pairs) {
    const expected = sumSamples(samples, prom, labels);
    assert.ok(expected > 0, `${prom} has data`);
    assert.equal(total(metrics.get(otel), attrs), expected, otel);
  }
  // E2E: the ok ones agree; OTLP also has the failed ones that have a duration, under error.type.
  const e2e = metrics.get('gen_ai.server.request.duration');
  const ok = e2e!.dataPoints.filter((p) => p.attributes['error.type'] === undefined);
  assert.equal(ok.reduce((n, p) => n + (p.value as { count: number }).count, 0), sumSamples(samples, 'gen_ai_server_request_duration_seconds_count'));
  assert.deepEqual(e2e!.dataPoints.map((p) => p.attributes['error.type']).filter(Boolean).sort(), ['500', '529', 'stream_error']);
  assert.equal(total(metrics.get('infermeter.requests_in_flight')), 3);
});

test('failed requests carry error.type, ok ones never do; the model is bounded like on /metrics', async () => {
  const { metrics } = await both();
  const requests = metrics.get('infermeter.requests')!;
  for (const p of requests.dataPoints) {
    assert.equal(p.attributes['error.type'] === undefined, p.attributes['outcome'] === 'ok', JSON.stringify(p.attributes));
    assert.ok(['m1', 'other'].includes(String(p.attributes['gen_ai.request.model'])));
    assert.equal(p.attributes['gen_ai.provider.name'], 'vllm');
  }
  assert.equal(total(requests, { outcome: 'client_abort', 'error.type': 'client_abort' }), 1);
  assert.equal(total(requests, { outcome: 'upstream_error', 'error.type': '500' }), 1);
});

test('the five latency histograms carry api on both exports, with the same counts per API; token usage and the counters do not', async () => {
  const { metrics, samples } = await both();
  const latency: [string, string][] = [
    ['gen_ai.server.time_to_first_token', 'gen_ai_server_time_to_first_token_seconds_count'],
    ['infermeter.time_to_first_output', 'infermeter_time_to_first_output_seconds_count'],
    ['gen_ai.server.time_per_output_token', 'gen_ai_server_time_per_output_token_seconds_count'],
    ['gen_ai.server.request.duration', 'gen_ai_server_request_duration_seconds_count'],
    ['infermeter.inter_chunk_latency', 'infermeter_inter_chunk_latency_seconds_count'],
  ];
  for (const [otel, prom] of latency) {
    const m = metrics.get(otel)!;
    const ok = m.dataPoints.filter((p) => p.attributes['error.type'] === undefined);
    const apis = [...new Set(ok.map((p) => String(p.attributes['api'])))].sort();
    assert.deepEqual(apis, [...new Set(samples.filter((x) => x.name === prom).map((x) => x.labels['api']))].sort(), `${otel}: the same APIs as ${prom}`);
    // Completions' one record has a single output token: no TPOT, so no completions TPOT series.
    assert.deepEqual(apis, otel === 'gen_ai.server.time_per_output_token' ? ['chat_completions', 'messages', 'responses'] : ['chat_completions', 'completions', 'messages', 'responses'], otel);
    for (const api of apis) {
      const n = ok.filter((p) => p.attributes['api'] === api).reduce((k, p) => k + (p.value as { count: number }).count, 0);
      assert.equal(n, sumSamples(samples, prom, { api }), `${otel} ${api}`);
    }
  }
  // A failed Messages request's duration is under its API too (with error.type, as every failure).
  assert.equal(total(metrics.get('gen_ai.server.request.duration'), { api: 'messages', 'error.type': '529' }), 1);
  for (const name of ['gen_ai.client.token.usage', 'infermeter.requests', 'infermeter.tokens']) {
    assert.ok(metrics.get(name)!.dataPoints.every((p) => p.attributes['api'] === undefined), `${name} has no api`);
  }
  assert.ok(samples.filter((s) => s.name.startsWith('gen_ai_client_token_usage') || s.name === 'infermeter_requests_total').every((s) => s.labels['api'] === undefined));
});
