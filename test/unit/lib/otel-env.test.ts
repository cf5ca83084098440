import { test } from 'node:test';
import assert from 'node:assert/strict';
import { otlpSettings } from '../../../src/lib/otel-env.js';
import { ConfigError } from '../../../src/lib/errors.js';

const ON = [
  { env: { OTEL_METRICS_EXPORTER: 'otlp' }, protocol: 'http/protobuf', endpoint: 'http://localhost:4318/v1/metrics' },
  { env: { OTEL_METRICS_EXPORTER: 'prometheus, otlp' }, protocol: 'http/protobuf', endpoint: 'http://localhost:4318/v1/metrics' },
  { env: { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel:4318/' }, protocol: 'http/protobuf', endpoint: 'http://otel:4318/v1/metrics' },
  { env: { OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'http://otel:9/custom' }, protocol: 'http/protobuf', endpoint: 'http://otel:9/custom' },
  { env: { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, protocol: 'grpc', endpoint: 'http://otel:4317' },
  { env: { OTEL_METRICS_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, protocol: 'grpc', endpoint: 'http://localhost:4317' },
  { env: { OTEL_METRICS_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: 'http/json' }, protocol: 'http/json', endpoint: 'http://localhost:4318/v1/metrics' },
] as const;

for (const c of ON) {
  test(`on: ${JSON.stringify(c.env)}`, () => {
    const s = otlpSettings({ ...c.env });
    assert.ok(s);
    assert.equal(s.protocol, c.protocol);
    assert.equal(s.endpoint, c.endpoint);
    assert.equal(s.intervalMs, 60_000);
    assert.equal(s.timeoutMs, 30_000);
  });
}

const OFF = [
  {},
  { OTEL_METRICS_EXPORTER: 'prometheus' },
  { OTEL_METRICS_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel:4318' },
  { OTEL_SDK_DISABLED: 'true', OTEL_METRICS_EXPORTER: 'otlp' },
  { OTEL_EXPORTER_OTLP_ENDPOINT: '' },
  // Traces-only endpoints say nothing about metrics.
  { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://otel:4318/v1/traces' },
];

for (const env of OFF) {
  test(`off: ${JSON.stringify(env)}`, () => assert.equal(otlpSettings({ ...env }), null));
}

test('export interval and timeout come from OTEL_METRIC_EXPORT_*; the timeout never exceeds the interval', () => {
  assert.deepEqual(
    otlpSettings({ OTEL_METRICS_EXPORTER: 'otlp', OTEL_METRIC_EXPORT_INTERVAL: '15000', OTEL_METRIC_EXPORT_TIMEOUT: '5000' }),
    { protocol: 'http/protobuf', endpoint: 'http://localhost:4318/v1/metrics', intervalMs: 15_000, timeoutMs: 5_000, histogramAggregation: 'explicit_bucket_histogram' },
  );
  assert.equal(otlpSettings({ OTEL_METRICS_EXPORTER: 'otlp', OTEL_METRIC_EXPORT_INTERVAL: '1000' })?.timeoutMs, 1000);
});

test('unusable values stop startup naming the variable', () => {
  const bad = [
    [{ OTEL_METRICS_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/thrift' }, /OTEL_EXPORTER_OTLP_PROTOCOL.*http\/protobuf, http\/json, grpc/],
    [{ OTEL_METRICS_EXPORTER: 'otlp', OTEL_METRIC_EXPORT_INTERVAL: '10s' }, /OTEL_METRIC_EXPORT_INTERVAL.*milliseconds/],
    [{ OTEL_METRICS_EXPORTER: 'otlp', OTEL_METRIC_EXPORT_TIMEOUT: '-1' }, /OTEL_METRIC_EXPORT_TIMEOUT/],
  ] as const;
  for (const [env, message] of bad) {
    assert.throws(() => otlpSettings({ ...env }), (err: unknown) => err instanceof ConfigError && message.test(err.message));
  }
});

test('histogram aggregation: explicit by default, exponential when OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION says', () => {
  assert.equal(otlpSettings({ OTEL_METRICS_EXPORTER: 'otlp' })!.histogramAggregation, 'explicit_bucket_histogram');
  const env = { OTEL_METRICS_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION: 'base2_exponential_bucket_histogram' };
  assert.equal(otlpSettings(env)!.histogramAggregation, 'base2_exponential_bucket_histogram');
  assert.throws(
    () => otlpSettings({ OTEL_METRICS_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION: 'exponential' }),
    (e: unknown) => e instanceof ConfigError && /OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION/.test(String(e)),
  );
});
