/**
 * A running infermeter, configured only through the standard OTEL_* variables, pushes
 * OTLP/HTTP protobuf to a real receiver after known requests; the receiver decodes the wire
 * format and the names, units, attributes and bucket counts match what was sent and what
 * /metrics says.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { DEFAULT_BUCKETS } from '../../src/lib/metric-def.js';
import { parsePrometheusText, sumSamples } from '../../src/lib/prom-text.js';
import { FakeOtlpReceiver, attrs, type DecodedMetric, type HistogramPoint } from '../fakes/otlp-receiver.js';
import { TinyUpstream, TINY_MODEL, PROMPT_TOKENS } from '../fakes/tiny-upstream.js';
import { InfermeterProcess } from '../fakes/infermeter-process.js';

const TOKENS = 4;
const STREAMED = 3;
const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string };

const receiver = new FakeOtlpReceiver();
const upstream = new TinyUpstream(TOKENS);
let infermeter: InfermeterProcess;

before(async () => {
  const otlp = await receiver.start();
  const up = await upstream.start();
  infermeter = InfermeterProcess.forUpstream(up, ['--models', TINY_MODEL, '--log-level', 'info'], {
    OTEL_EXPORTER_OTLP_ENDPOINT: otlp,
    OTEL_METRIC_EXPORT_INTERVAL: '300',
    OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=test',
  });
  await infermeter.start();
});

after(async () => {
  await infermeter?.stop();
  await upstream.close();
  await receiver.close();
});

async function chat(stream: boolean): Promise<string> {
  const res = await fetch(`${infermeter.proxyUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: TINY_MODEL, stream, messages: [{ role: 'user', content: 'hi' }] }),
  });
  assert.equal(res.status, 200);
  return res.text();
}

function points(m: DecodedMetric | undefined): HistogramPoint[] {
  assert.ok(m?.histogram, `${m?.name ?? 'metric'} is a histogram`);
  return m.histogram.dataPoints ?? [];
}

const REQUEST_ATTRS = { 'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': 'vllm', 'gen_ai.request.model': TINY_MODEL };

test('known requests arrive over OTLP with GenAI names, units, attributes and Prometheus buckets', async () => {
  for (let i = 0; i < STREAMED; i++) await chat(true);
  await chat(false);
  const requestsDone = () => {
    const m = receiver.latest('infermeter.requests');
    return (m?.sum?.dataPoints ?? []).reduce((n, p) => n + Number(p.asDouble ?? p.asInt ?? 0), 0) === STREAMED + 1;
  };
  await receiver.waitFor(requestsDone, 10_000);

  const first = receiver.received.at(-1)!;
  assert.equal(first.contentType, 'application/x-protobuf');
  const resource = attrs(first.request.resourceMetrics?.[0]?.resource?.attributes);
  assert.equal(resource['service.name'], 'infermeter');
  assert.equal(resource['service.version'], pkg.version);
  assert.equal(resource['deployment.environment.name'], 'test');
  assert.match(String(resource['service.instance.id']), /:\d+$/);

  const ttft = receiver.latest('gen_ai.server.time_to_first_token');
  assert.equal(ttft?.unit, 's');
  assert.equal(ttft?.histogram?.aggregationTemporality, 'AGGREGATION_TEMPORALITY_CUMULATIVE');
  const [tp] = points(ttft);
  assert.deepEqual(attrs(tp!.attributes), REQUEST_ATTRS);
  assert.equal(tp!.count, STREAMED);
  assert.deepEqual(tp!.explicitBounds, DEFAULT_BUCKETS.ttft);
  assert.equal(tp!.bucketCounts?.length, DEFAULT_BUCKETS.ttft.length + 1);
  assert.equal(tp!.bucketCounts!.reduce((a, b) => a + b, 0), STREAMED);

  const tpot = points(receiver.latest('gen_ai.server.time_per_output_token'));
  assert.equal(tpot[0]!.count, STREAMED);
  assert.deepEqual(tpot[0]!.explicitBounds, DEFAULT_BUCKETS.tpot);

  const e2e = points(receiver.latest('gen_ai.server.request.duration'));
  assert.equal(e2e.length, 1, 'no failed requests, so no error.type series');
  assert.equal(e2e[0]!.count, STREAMED + 1);
  assert.equal(receiver.latest('gen_ai.server.request.duration')?.unit, 's');

  const usage = receiver.latest('gen_ai.client.token.usage');
  assert.equal(usage?.unit, '{token}');
  const byType = new Map(points(usage).map((p) => [attrs(p.attributes)['gen_ai.token.type'], p]));
  assert.equal(byType.get('input')?.count, STREAMED + 1);
  assert.equal(byType.get('input')?.sum, (STREAMED + 1) * PROMPT_TOKENS);
  assert.equal(byType.get('output')?.sum, (STREAMED + 1) * TOKENS);
  assert.deepEqual(byType.get('output')?.explicitBounds, DEFAULT_BUCKETS.tokens);

  const chunks = points(receiver.latest('infermeter.inter_chunk_latency'));
  assert.equal(chunks[0]!.count, STREAMED * (TOKENS - 1));

  const requests = receiver.latest('infermeter.requests');
  assert.equal(requests?.unit, '{request}');
  assert.equal(requests?.sum?.isMonotonic, true);
  const req = requests!.sum!.dataPoints!.map((p) => attrs(p.attributes));
  assert.deepEqual(req, [{ ...REQUEST_ATTRS, route: 'chat_completions', outcome: 'ok' }]);

  const tokens = receiver.latest('infermeter.tokens')!.sum!.dataPoints!;
  const outTokens = tokens.find((p) => attrs(p.attributes)['gen_ai.token.type'] === 'output');
  assert.equal(Number(outTokens?.asDouble ?? outTokens?.asInt), (STREAMED + 1) * TOKENS);
});

test('OTLP bucket counts equal the /metrics bucket counts for the same requests', async () => {
  const text = await (await fetch(`${infermeter.metricsUrl}/metrics`)).text();
  const { samples } = parsePrometheusText(text);
  const otlp = points(receiver.latest('gen_ai.server.time_to_first_token'))[0]!;
  let cumulative = 0;
  DEFAULT_BUCKETS.ttft.forEach((le, i) => {
    cumulative += otlp.bucketCounts![i]!;
    const prom = sumSamples(samples, 'gen_ai_server_time_to_first_token_seconds_bucket', { le: String(le), gen_ai_request_model: TINY_MODEL });
    assert.equal(cumulative, prom, `bucket le=${le}`);
  });
  const promChunks = sumSamples(samples, 'infermeter_inter_chunk_latency_seconds_count');
  assert.equal(points(receiver.latest('infermeter.inter_chunk_latency'))[0]!.count, promChunks);
});
