/**
 * A running infermeter, configured only through the standard OTEL_* variables, pushes
 * OTLP/HTTP protobuf to a real receiver after known requests; the receiver decodes the wire
 * format and the names, units, attributes and bucket counts match what was sent and what
 * /metrics says.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
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

/**
 * The default bucket boundaries, from their sources rather than the code (issue 29): the
 * OpenTelemetry GenAI semantic conventions' advisory boundaries, which README says are
 * "extended upward (TTFT to 2560 s, E2E to 2621 s)", by doubling from the last one.
 */
const SEMCONV = {
  ttft: [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10],
  tpot: [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5],
  e2e: [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92],
  tokens: [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864],
};
const doubledTo = (list: number[], top: number) => {
  const out = [...list];
  while (out[out.length - 1]! < top) out.push(out[out.length - 1]! * 2);
  return out;
};
const TTFT_BOUNDS = doubledTo(SEMCONV.ttft, 2560);

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
  // The latency histograms carry the API too (undotted, so it reaches Prometheus as /metrics' `api`); the counters do not.
  assert.deepEqual(attrs(tp!.attributes), { ...REQUEST_ATTRS, api: 'chat_completions' });
  assert.equal(tp!.count, STREAMED);
  assert.deepEqual(tp!.explicitBounds, TTFT_BOUNDS);
  assert.equal(TTFT_BOUNDS[TTFT_BOUNDS.length - 1], 2560);
  assert.equal(tp!.bucketCounts?.length, TTFT_BOUNDS.length + 1);
  assert.equal(tp!.bucketCounts!.reduce((a, b) => a + b, 0), STREAMED);

  const tpot = points(receiver.latest('gen_ai.server.time_per_output_token'));
  assert.equal(tpot[0]!.count, STREAMED);
  // README names no top for TPOT: the semconv list, then ascending boundaries above it.
  const tpotBounds = tpot[0]!.explicitBounds!;
  assert.deepEqual(tpotBounds.slice(0, SEMCONV.tpot.length), SEMCONV.tpot);
  assert.ok(tpotBounds.length > SEMCONV.tpot.length && tpotBounds.every((b, i) => i === 0 || b > tpotBounds[i - 1]!), `TPOT bounds ${tpotBounds}`);

  const e2e = points(receiver.latest('gen_ai.server.request.duration'));
  assert.equal(e2e.length, 1, 'no failed requests, so no error.type series');
  assert.equal(e2e[0]!.count, STREAMED + 1);
  assert.deepEqual(e2e[0]!.explicitBounds, doubledTo(SEMCONV.e2e, 2621));
  assert.equal(e2e[0]!.explicitBounds!.at(-1), 2621.44, 'README: E2E to 2621 s');
  assert.equal(receiver.latest('gen_ai.server.request.duration')?.unit, 's');

  const usage = receiver.latest('gen_ai.client.token.usage');
  assert.equal(usage?.unit, '{token}');
  const byType = new Map(points(usage).map((p) => [attrs(p.attributes)['gen_ai.token.type'], p]));
  assert.equal(byType.get('input')?.count, STREAMED + 1);
  assert.equal(byType.get('input')?.sum, (STREAMED + 1) * PROMPT_TOKENS);
  assert.equal(byType.get('output')?.sum, (STREAMED + 1) * TOKENS);
  assert.deepEqual(byType.get('output')?.explicitBounds, SEMCONV.tokens);

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
  TTFT_BOUNDS.forEach((le, i) => {
    cumulative += otlp.bucketCounts![i]!;
    const prom = sumSamples(samples, 'gen_ai_server_time_to_first_token_seconds_bucket', { le: String(le), gen_ai_request_model: TINY_MODEL });
    assert.equal(cumulative, prom, `bucket le=${le}`);
  });
  const promChunks = sumSamples(samples, 'infermeter_inter_chunk_latency_seconds_count');
  assert.equal(points(receiver.latest('infermeter.inter_chunk_latency'))[0]!.count, promChunks);
});
