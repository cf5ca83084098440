/**
 * An unusable OTEL_* value stops infermeter at startup with a message naming the variable,
 * before it listens: no half-configured daemon that silently pushes nowhere.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { CLI } from '../fakes/infermeter-process.js';

test('a bad OTEL_EXPORTER_OTLP_PROTOCOL stops startup, naming the variable', () => {
  const r = spawnSync(process.execPath, [CLI, '--upstream', 'http://127.0.0.1:9', '--listen', '127.0.0.1:0', '--metrics-listen', '127.0.0.1:0',
    '--no-collector.gpu', '--no-collector.engine', '--no-collector.host'], {
    env: { PATH: process.env['PATH'], OTEL_METRICS_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_PROTOCOL: 'thrift' },
    encoding: 'utf8',
    timeout: 20_000,
  });
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /OTEL_EXPORTER_OTLP_PROTOCOL: expected one of http\/protobuf, http\/json, grpc, got "thrift"/);
  assert.doesNotMatch(r.stdout, /infermeter ready/);
});
