/**
 * OTEL_EXPORTER_OTLP_PROTOCOL=grpc: a running infermeter pushes to a real gRPC receiver,
 * and what arrives decodes to the same instruments as over HTTP.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeOtlpGrpcReceiver } from '../fakes/otlp-grpc-receiver.js';
import { attrs } from '../fakes/otlp-receiver.js';
import { TinyUpstream, TINY_MODEL } from '../fakes/tiny-upstream.js';
import { InfermeterProcess } from '../fakes/infermeter-process.js';

test('metrics arrive over OTLP/gRPC', async () => {
  const receiver = new FakeOtlpGrpcReceiver();
  const upstream = new TinyUpstream(3);
  const endpoint = await receiver.start();
  const infermeter = InfermeterProcess.forUpstream(await upstream.start(), ['--models', TINY_MODEL], {
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
    OTEL_METRIC_EXPORT_INTERVAL: '300',
  });
  try {
    await infermeter.start();
    assert.equal(infermeter.logsMatching('OTLP metrics export on')[0]?.['protocol'], 'grpc');
    for (let i = 0; i < 2; i++) {
      const res = await fetch(`${infermeter.proxyUrl}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: TINY_MODEL, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
      });
      assert.equal(res.status, 200);
      await res.text();
    }
    const deadline = Date.now() + 10_000;
    while ((receiver.latest('gen_ai.server.time_to_first_token')?.histogram?.dataPoints?.[0]?.count ?? 0) < 2) {
      assert.ok(Date.now() < deadline, `2 TTFT observations over gRPC (${receiver.received.length} exports)`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const point = receiver.latest('gen_ai.server.time_to_first_token')!.histogram!.dataPoints![0]!;
    assert.equal(attrs(point.attributes)['gen_ai.request.model'], TINY_MODEL);
    assert.equal(receiver.latest('gen_ai.server.time_to_first_token')!.unit, 's');
  } finally {
    await infermeter.stop();
    await upstream.close();
    await receiver.close();
  }
});
