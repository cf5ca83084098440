/**
 * The OTLP consumer (side/consumers.ts): off means the OpenTelemetry SDK is never loaded; on means
 * batches that arrive while it loads are recorded once it is ready; a bad value throws.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { pino } from 'pino';
import { resolveConfig } from '../../../src/config.js';
import { ConfigError } from '../../../src/lib/errors.js';
import { startOtlp } from '../../../src/exporters/otlp/start.js';
import { judgeBatch } from '../../../src/metrics/batch.js';
import { UNMEASURED, type RequestRecord } from '../../../src/record/record.js';
import { FakeOtlpReceiver } from '../../fakes/otlp-receiver.js';

const config = resolveConfig({ upstream: 'http://127.0.0.1:8000' }, {});
const log = pino({ level: 'silent' });
const sdkLoaded = () => Object.keys(createRequire(import.meta.url).cache).some((k) => k.includes('@opentelemetry/sdk-metrics'));

function withEnv<T>(vars: Record<string, string>, fn: () => T): T {
  const saved = { ...process.env };
  for (const k of Object.keys(process.env)) if (k.startsWith('OTEL_')) delete process.env[k];
  Object.assign(process.env, vars);
  try {
    return fn();
  } finally {
    for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
    Object.assign(process.env, saved);
  }
}
// The endpoint is resolved when the hook starts; the SDK, loaded later, must not need the env.

const record: RequestRecord = {
  ...UNMEASURED, startedAt: Date.now(),
  route: 'chat_completions', operation: 'chat', model: 'm', outcome: 'ok', status: 200, streamed: true,
  ttft: 0.1, ttfo: 0.1, e2e: 1, inputTokens: 3, outputTokens: 4, tokenSource: 'usage', chunkGaps: null, meteringFailure: null, errorType: null,
};

test('OTLP off: no hook, and the OpenTelemetry SDK is never loaded', () => {
  assert.equal(withEnv({}, () => startOtlp(config, log)), null);
  assert.equal(sdkLoaded(), false);
});

test('a bad value throws at startup, naming the variable', () => {
  assert.throws(() => withEnv({ OTEL_METRICS_EXPORTER: 'otlp', OTEL_METRIC_EXPORT_INTERVAL: 'soon' }, () => startOtlp(config, log)),
    (err: unknown) => err instanceof ConfigError && /OTEL_METRIC_EXPORT_INTERVAL/.test(err.message));
});

test('OTLP on: batches ingested while the SDK loads are exported once it is ready', async () => {
  const receiver = new FakeOtlpReceiver();
  const url = await receiver.start();
  const hook = withEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: url, OTEL_METRIC_EXPORT_INTERVAL: '60000' }, () => startOtlp(config, log));
  try {
    assert.ok(hook);
    hook.ingest(judgeBatch([record, record], 0, config.slos, (m) => m));
    const recorder = await hook.ready;
    assert.ok(recorder);
    assert.ok(sdkLoaded());
    hook.ingest(judgeBatch([record], 1, config.slos, (m) => m));
    await recorder.flush();
    const ttft = receiver.latest('gen_ai.server.time_to_first_token');
    assert.equal(ttft?.histogram?.dataPoints?.[0]?.count, 3);
  } finally {
    await hook?.close();
    await receiver.close();
  }
});
