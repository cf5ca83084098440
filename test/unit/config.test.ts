import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OPTIONS, envName, resolveConfig } from '../../src/config.js';
import { ConfigError } from '../../src/lib/errors.js';
import { DEFAULT_BUCKETS } from '../../src/lib/metric-def.js';

test('flag > environment > default', () => {
  const cfg = resolveConfig({ upstream: 'http://a:1/' , listen: '127.0.0.1:81' }, { INFERMETER_LISTEN: '0.0.0.0:82', INFERMETER_ENGINE: 'sglang' });
  assert.equal(cfg.upstream, 'http://a:1');
  assert.deepEqual(cfg.listen, { host: '127.0.0.1', port: 81 });
  assert.equal(cfg.engine, 'sglang');
  assert.equal(cfg.engineMetrics, 'http://a:1/metrics');
  assert.equal(cfg.idleTimeout, 300);
  assert.equal(cfg.bodyLimit, 32_000_000);
  assert.equal(cfg.collectorGpu, true);
});

test('every flag has an environment variable', () => {
  for (const o of OPTIONS) assert.match(envName(o), /^INFERMETER_[A-Z_]+$/);
  assert.equal(envName(OPTIONS.find((o) => o.key === 'collectorGpu')!), 'INFERMETER_COLLECTOR_GPU');
});

test('errors name the flag', () => {
  assert.throws(() => resolveConfig({ upstream: 'ftp://x' }, {}), (e: unknown) => e instanceof ConfigError && e.flag === '--upstream');
  assert.throws(() => resolveConfig({ upstream: 'http://x', gpuInterval: '500ms' }, {}), /--gpu-interval: nvidia-smi dmon samples in whole seconds/);
});

test('buckets: defaults, with SLO thresholds inserted as boundaries', () => {
  const cfg = resolveConfig({ upstream: 'http://x' }, {});
  assert.deepEqual(cfg.buckets.ttft, DEFAULT_BUCKETS.ttft);
  assert.ok(cfg.buckets.ttft.at(-1)! >= 2560, 'TTFT buckets extend far past the OTel 10 s');
});

test('--inject-usage auto: on, except for TGI', () => {
  assert.equal(resolveConfig({ upstream: 'http://x' }, {}).injectUsage, true);
  assert.equal(resolveConfig({ upstream: 'http://x', engine: 'tgi' }, {}).injectUsage, false);
  assert.equal(resolveConfig({ upstream: 'http://x', engine: 'tgi', injectUsage: 'true' }, {}).injectUsage, true);
  assert.equal(resolveConfig({ upstream: 'http://x', injectUsage: 'false' }, {}).injectUsage, false);
});

test('--gpu-source and --dcgm-exporter-url', () => {
  const cfg = resolveConfig({ upstream: 'http://x' }, {});
  assert.equal(cfg.gpuSource, 'auto');
  assert.equal(cfg.dcgmExporterUrl, '');
  const dcgm = resolveConfig({ upstream: 'http://x' }, { INFERMETER_GPU_SOURCE: 'dcgm-exporter', INFERMETER_DCGM_EXPORTER_URL: 'http://127.0.0.1:9400/metrics' });
  assert.deepEqual([dcgm.gpuSource, dcgm.dcgmExporterUrl], ['dcgm-exporter', 'http://127.0.0.1:9400/metrics']);
  assert.throws(() => resolveConfig({ upstream: 'http://x', gpuSource: 'nvml' }, {}), (e: unknown) => e instanceof ConfigError && e.flag === '--gpu-source');
  assert.throws(() => resolveConfig({ upstream: 'http://x', dcgmExporterUrl: 'localhost:9400' }, {}), (e: unknown) => e instanceof ConfigError && e.flag === '--dcgm-exporter-url');
});

test('tracing and the slow-request log: from the OTEL_* environment and their flags; bad values name the source', () => {
  const off = resolveConfig({ upstream: 'http://x' }, {});
  assert.equal(off.tracing, null);
  assert.equal(off.traceKeepFailures, false);
  assert.equal(off.slowLogSize, 10);
  assert.equal(off.slowLogWindow, 900);
  const on = resolveConfig({ upstream: 'http://x', traceKeepFailures: 'true' }, { OTEL_TRACES_EXPORTER: 'otlp', OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.1', INFERMETER_SLOW_LOG_SIZE: '3' });
  assert.deepEqual(on.tracing, { protocol: 'http/protobuf', endpoint: 'http://localhost:4318/v1/traces', sampler: 'parentbased_traceidratio', ratio: 0.1 });
  assert.equal(on.traceKeepFailures, true);
  assert.equal(on.slowLogSize, 3);
  assert.throws(() => resolveConfig({ upstream: 'http://x' }, { OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'thrift' }), /OTEL_EXPORTER_OTLP_TRACES_PROTOCOL/);
  assert.throws(() => resolveConfig({ upstream: 'http://x', slowLogSize: '1000' }, {}), /--slow-log-size: expected a whole number from 1 to 100/);
  assert.throws(() => resolveConfig({ upstream: 'http://x', slowLogWindow: '0s' }, {}), /--slow-log-window: expected a duration above 0/);
});
