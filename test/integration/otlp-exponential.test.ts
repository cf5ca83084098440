/**
 * OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION=base2_exponential_bucket_histogram:
 * a running infermeter pushes every histogram as an OTLP exponential histogram; the receiver
 * decodes the data points, whose buckets hold every observation and bracket min and max.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeOtlpReceiver, attrs, type ExponentialPoint } from '../fakes/otlp-receiver.js';
import { TinyUpstream, TINY_MODEL } from '../fakes/tiny-upstream.js';
import { InfermeterProcess } from '../fakes/infermeter-process.js';

const TOKENS = 4;
const STREAMED = 3;
const receiver = new FakeOtlpReceiver();
const upstream = new TinyUpstream(TOKENS);
let infermeter: InfermeterProcess;

before(async () => {
  const otlp = await receiver.start();
  const up = await upstream.start();
  infermeter = InfermeterProcess.forUpstream(up, ['--models', TINY_MODEL], {
    OTEL_EXPORTER_OTLP_ENDPOINT: otlp,
    OTEL_METRIC_EXPORT_INTERVAL: '300',
    OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION: 'base2_exponential_bucket_histogram',
  });
  await infermeter.start();
});

after(async () => {
  await infermeter?.stop();
  await upstream.close();
  await receiver.close();
});

function exponential(name: string): ExponentialPoint[] {
  const m = receiver.latest(name);
  assert.ok(m?.exponentialHistogram, `${name} arrives as an exponential histogram`);
  assert.equal(m.histogram, undefined);
  assert.equal(m.exponentialHistogram.aggregationTemporality, 'AGGREGATION_TEMPORALITY_CUMULATIVE');
  return m.exponentialHistogram.dataPoints ?? [];
}

/** Buckets hold count − zero_count; bucket i is (base^i, base^(i+1)] with base = 2^(2^-scale) (OTLP's indexing). */
function checkPoint(name: string, p: ExponentialPoint, count: number): void {
  assert.equal(p.count, count, `${name} count`);
  const counts = p.positive?.bucketCounts ?? [];
  assert.ok(counts.length <= 160, `${name}: ${counts.length} buckets`);
  assert.equal(counts.reduce((a, b) => a + b, 0) + (p.zeroCount ?? 0), count, `${name}: every observation in a bucket`);
  const base = 2 ** (2 ** -(p.scale ?? 0));
  const offset = p.positive?.offset ?? 0;
  const firstIndex = offset + counts.findIndex((c) => c > 0);
  let lastIndex = offset + counts.length - 1;
  while (counts[lastIndex - offset] === 0) lastIndex--;
  const tolerance = 1 + 1e-9;
  assert.ok(base ** firstIndex <= p.min! * tolerance && p.min! <= base ** (firstIndex + 1) * tolerance, `${name}: min ${p.min} in the first bucket`);
  assert.ok(base ** lastIndex <= p.max! * tolerance && p.max! <= base ** (lastIndex + 1) * tolerance, `${name}: max ${p.max} in the last bucket`);
}

test('every histogram goes out exponential, decoded data points hold every observation', async () => {
  for (let i = 0; i < STREAMED; i++) {
    const res = await fetch(`${infermeter.proxyUrl}/v1/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: TINY_MODEL, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    await res.text();
  }
  await receiver.waitFor(() => (receiver.latest('gen_ai.server.time_to_first_token')?.exponentialHistogram?.dataPoints?.[0]?.count ?? 0) === STREAMED, 10_000);

  const [ttft] = exponential('gen_ai.server.time_to_first_token');
  assert.equal(attrs(ttft!.attributes)['gen_ai.request.model'], TINY_MODEL);
  assert.ok((ttft!.scale ?? 0) >= 0 && (ttft!.scale ?? 0) <= 20, `scale ${ttft!.scale}`);
  checkPoint('TTFT', ttft!, STREAMED);
  checkPoint('TPOT', exponential('gen_ai.server.time_per_output_token')[0]!, STREAMED);
  checkPoint('E2E', exponential('gen_ai.server.request.duration')[0]!, STREAMED);
  checkPoint('inter-chunk', exponential('infermeter.inter_chunk_latency')[0]!, STREAMED * (TOKENS - 1));
  const usage = exponential('gen_ai.client.token.usage');
  const output = usage.find((p) => attrs(p.attributes)['gen_ai.token.type'] === 'output')!;
  checkPoint('output tokens', output, STREAMED);
  assert.equal(output.min, TOKENS);
  assert.equal(output.sum, STREAMED * TOKENS);
});
