/** OTEL_EXPORTER_OTLP_PROTOCOL=grpc for traces: the span reaches a real gRPC receiver with the ids the upstream saw. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeOtlpGrpcReceiver } from '../fakes/otlp-grpc-receiver.js';
import { startFakeUpstream } from '../fakes/upstream.js';
import { InfermeterProcess } from '../fakes/infermeter-process.js';

test('spans arrive over OTLP/gRPC', async () => {
  const receiver = new FakeOtlpGrpcReceiver();
  const upstream = await startFakeUpstream();
  const infermeter = InfermeterProcess.forUpstream(upstream.url, ['--log-level', 'info'], {
    OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: await receiver.start(), OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_BSP_SCHEDULE_DELAY: '100',
  });
  try {
    await infermeter.start();
    assert.equal(infermeter.logsMatching('OTLP trace export on')[0]?.['protocol'], 'grpc');
    const res = await fetch(`${infermeter.proxyUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'fake-model', stream: true, messages: [{ role: 'user', content: 'hi' }], fake: { schedule: { firstMs: 5, chunks: 3, gapMs: 2, promptTokens: 4 } } }),
    });
    await res.text();
    const seen = upstream.events.find((e) => e.kind === 'request' && e.path === '/v1/chat/completions')!;
    const [, traceId, spanId] = String(seen.headers!['traceparent']).split('-');
    const deadline = Date.now() + 10_000;
    while (!receiver.spans.some((s) => s.spanId === spanId)) {
      assert.ok(Date.now() < deadline, `the span over gRPC (${receiver.spans.length} received)`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const span = receiver.spans.find((s) => s.spanId === spanId)!;
    assert.equal(span.traceId, traceId);
    assert.equal(span.attributes['gen_ai.usage.output_tokens'], 3);
    assert.equal(span.resource['service.name'], 'infermeter');
  } finally {
    await infermeter.stop();
    await upstream.close();
    await receiver.close();
  }
});
