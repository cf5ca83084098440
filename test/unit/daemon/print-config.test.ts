/**
 * `--print-config` prints back the same configuration: a config is resolved, printed, the print
 * read back as a config file, and the two compared for every key of the flag table (secrets
 * aside: they print as <redacted>), for `upstreams:` and for `slos:`. Every key has a value
 * here that is not its default (a new row fails to compile until it has one), so a key the
 * print drops or mangles cannot hide behind its default.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { OPTIONS, resolveConfig, type Config } from '../../../src/config.js';
import type { FlagKey } from '../../../src/config/types.js';
import { renderConfig } from '../../../src/daemon/print-config.js';
import { makeCerts } from '../../fakes/certs.js';

const certs = makeCerts();
const dir = mkdtempSync(join(tmpdir(), 'infermeter-print-roundtrip-'));
const bench = join(dir, 'bench.json');
writeFileSync(bench, JSON.stringify({ schemaVersion: 1, steps: [] }));
const webConfig = join(dir, 'web.yml');
const tokenizer = join(dir, 'tokenizer.json');
writeFileSync(tokenizer, '{}');
writeFileSync(webConfig, `tls_server_config:\n  cert_file: ${certs.serverCert}\n  key_file: ${certs.serverKey}\n`);

/** A valid value for every row that is not its default (upstream: the first of the list's). */
const NOT_DEFAULT: Record<FlagKey, string> = {
  upstream: 'https://127.0.0.1:8001',
  listen: '127.0.0.1:18080',
  metricsListen: '127.0.0.1:19464',
  engine: 'sglang',
  injectUsage: 'false',
  models: 'model-a,model-b',
  modelsRefresh: '30s',
  connectTimeout: '3s',
  headersTimeout: '60s',
  idleTimeout: '30s',
  stallAfter: '15s',
  shutdownTimeout: '5s',
  bodyLimit: '1mb',
  upstreamConnections: '64',
  workers: '2',
  logLevel: 'debug',
  nvidiaSmi: '/opt/nvidia/bin/nvidia-smi',
  dmonColumns: 'pucm',
  gpuInterval: '2s',
  gpuSource: 'dcgm-exporter',
  dcgmExporterUrl: 'http://127.0.0.1:9400/metrics',
  engineMetrics: 'http://127.0.0.1:2/metrics',
  engineInterval: '7s',
  hostInterval: '9s',
  collectorGpu: 'false',
  collectorEngine: 'false',
  collectorHost: 'false',
  promptTokensClasses: '100,1000',
  inFlightBands: '2,4',
  tenantFrom: 'api-key',
  tenantHeader: 'x-tenant',
  tenantSalt: 'pepper',
  stateDir: dir,
  tenantLimit: '5',
  tenantHistograms: 'true',
  nativeHistogramBucketFactor: '1.5',
  classicHistograms: 'false',
  nativeHistogramMaxBuckets: '100',
  nativeHistogramMinResetDuration: '30m',
  readyRequiresUpstream: 'true',
  livenessTimeout: '20s',
  webEnableLifecycle: 'true',
  upstreamCa: certs.caCert,
  upstreamCert: certs.clientCert,
  upstreamKey: certs.clientKey,
  upstreamInsecureSkipVerify: 'true',
  tlsCert: certs.serverCert,
  tlsKey: certs.serverKey,
  metricsTlsCert: certs.serverCert,
  metricsTlsKey: certs.serverKey,
  webConfigFile: webConfig,
  traceKeepFailures: 'true',
  slowLogSize: '20',
  slowLogWindow: '5m',
  bottleneckInterval: '2s',
  bottleneckBench: bench,
  bottleneckWindow: '1m',
  headroomWindow: '3m',
  ui: 'false',
  gpuHourCost: '2.5',
  energyPrice: '0.2',
  currency: 'EUR',
  energyPrefillRate: '16000',
  workloadTrace: join(dir, 'trace.jsonl'),
  workloadTraceBlockTokens: '256',
  workloadTraceMaxSize: '10mb',
  workloadTraceMaxFiles: '3',
  workloadTraceSample: '0.5',
  workloadTraceSessionHeader: 'x-session-id',
  workloadTraceOtlp: 'true',
  prefixCache: 'true',
  prefixCacheWindow: '2m',
  prefixCacheSample: '0.5',
  prefixCacheBlockSize: '32',
  prefixCacheTokens: '100000',
  tokenizers: `m=${tokenizer}`,
  hfHubCache: 'none',
  promptCharsPerToken: '3.5',
  promptHashSalt: 'salt',
};
const SECRET = new Set(OPTIONS.filter((o) => o.secret).map((o) => o.key));

const SLOS = {
  objective: 0.95,
  window: '7d',
  default: { ttft: '750ms', tpot: '40ms' },
  models: { 'model-a': { e2e: '30s', ttfo: 2 } },
  prompt_classes: [{ prompt_tokens_le: 100, ttft: '300ms' }, { prompt_tokens_le: 1000, ttft: '1.5s' }],
};

const UPSTREAMS = [
  { url: 'https://127.0.0.1:8001', name: 'first', gpus: [0, 1] },
  { url: 'https://127.0.0.1:8002', engine: 'vllm', engineMetrics: 'http://127.0.0.1:9002/metrics', connections: 8, headersTimeout: '2m' },
  { url: 'https://127.0.0.1:8003', gpus: ['GPU-0123abcd'], upstreamInsecureSkipVerify: false, upstreamCa: certs.otherCaCert },
];

function file(name: string, doc: Record<string, unknown>): string {
  const path = join(dir, name);
  writeFileSync(path, stringify(doc));
  return path;
}

/** Resolve, print, read the print back: both configs. */
function roundTrip(cli: Record<string, unknown>, env: Record<string, string>, name: string): { first: Config; again: Config; text: string } {
  const first = resolveConfig(cli, env);
  const text = renderConfig(first);
  const printed = join(dir, `${name}-printed.yaml`);
  writeFileSync(printed, text);
  const again = resolveConfig({ config: printed }, {});
  return { first, again, text };
}

function assertSame(first: Config, again: Config, text: string): void {
  for (const o of OPTIONS) {
    if (SECRET.has(o.key)) continue;
    assert.deepEqual(again[o.key], first[o.key], `${o.key} printed back differs; the print:\n${text}`);
  }
  assert.deepEqual(again.upstreams, first.upstreams, `upstreams: printed back differs; the print:\n${text}`);
  assert.deepEqual(again.slos, first.slos, `slos: printed back differs; the print:\n${text}`);
  assert.deepEqual(again.buckets, first.buckets, 'buckets printed back differ');
}

test('the fixture sets every key of the flag table to a value that is not its default', () => {
  const defaults = resolveConfig({ upstream: 'http://127.0.0.1:9' }, {});
  const { first } = roundTrip({ config: file('every-key.yaml', { ...NOT_DEFAULT, upstream: undefined, upstreams: UPSTREAMS, slos: SLOS }) }, {}, 'check');
  for (const o of OPTIONS) {
    if (o.key === 'upstream' || SECRET.has(o.key)) continue;
    assert.notDeepEqual(first[o.key], defaults[o.key], `${o.key} is its default in the fixture`);
  }
});

test('--print-config of a file with upstreams: and slos: reads back as the same configuration', () => {
  const { upstream: _u, ...keys } = NOT_DEFAULT;
  const path = file('upstreams.yaml', { ...keys, upstreams: UPSTREAMS, slos: SLOS });
  const { first, again, text } = roundTrip({ config: path }, {}, 'upstreams');
  assert.equal(first.upstreams.length, 3);
  assertSame(first, again, text);
  assert.equal(again.origins['upstreams'], 'file');
});

test('--print-config of flags, environment and a file (one upstream) reads back as the same configuration', () => {
  const { upstream, listen, engine, workers, ...rest } = NOT_DEFAULT;
  const path = file('mixed.yaml', { ...rest, slos: SLOS, buckets: { ttft: [0.1, 0.5, 2], e2e: [1, 10, 100] } });
  const { first, again, text } = roundTrip({ config: path, upstream, listen }, { INFERMETER_ENGINE: engine, INFERMETER_WORKERS: workers }, 'mixed');
  assert.deepEqual(first.upstreams.map((u) => u.url), [upstream]);
  assertSame(first, again, text);
});

test('a flag --upstream over a file\'s upstreams: prints the one upstream it resolved to', () => {
  const path = file('both.yaml', { upstreams: UPSTREAMS.slice(1).map((u) => ({ ...u, upstreamCa: '', upstreamInsecureSkipVerify: false })) });
  const { first, again, text } = roundTrip({ config: path, upstream: 'http://127.0.0.1:8009' }, {}, 'both');
  assert.deepEqual(first.upstreams.map((u) => u.url), ['http://127.0.0.1:8009']);
  assert.equal(first.origins['upstream'], 'flag');
  assertSame(first, again, text);
});
