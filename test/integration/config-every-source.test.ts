/**
 * Every setting of the flag table takes effect from each of its three sources, with the one
 * order flag > environment > file > default, booleans and `--no-*` switches included. The
 * real CLI resolves it (commander's parse, the environment, the YAML file) and says what it
 * resolved with `--print-config`. Table-driven over OPTIONS: a new flag fails here until it has
 * a row in SAMPLES (a valid value that is not its default), so it is covered the day it is added.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml, stringify } from 'yaml';
import { OPTIONS, envName, flagName } from '../../src/config.js';
import { CLI } from '../fakes/infermeter-process.js';
import { makeCerts } from '../fakes/certs.js';

const certs = makeCerts();
/** A bench report for --bottleneck-bench (its steps do not matter here). */
const benchReport = join(mkdtempSync(join(tmpdir(), 'infermeter-every-source-bench-')), 'bench.json');
writeFileSync(benchReport, JSON.stringify({ schemaVersion: 1, steps: [] }));
/** A state dir and an exporter-toolkit web config (TLS only) for --state-dir and --web.config.file. */
const stateDir = mkdtempSync(join(tmpdir(), 'infermeter-every-source-state-'));
const webConfig = join(stateDir, 'web.yml');
writeFileSync(webConfig, `tls_server_config:\n  cert_file: ${certs.serverCert}\n  key_file: ${certs.serverKey}\n`);

/** A valid, non-default value for every setting, as typed (flag and env) or written (file). */
const SAMPLES: Record<string, string> = {
  upstream: 'https://127.0.0.1:1',
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
  tenantSalt: 'pepper-not-to-be-printed',
  tenantLimit: '5',
  tenantHistograms: 'true',
  nativeHistogramBucketFactor: '1.5',
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
  traceKeepFailures: 'true',
  slowLogSize: '20',
  slowLogWindow: '5m',
  bottleneckInterval: '2s',
  bottleneckBench: benchReport,
  bottleneckWindow: '1m',
  headroomWindow: '3m',
  ui: 'false',
  stateDir,
  classicHistograms: 'false',
  webConfigFile: webConfig,
  workloadTrace: join(stateDir, 'trace.jsonl'),
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
  tokenizers: `m=${webConfig}`,
  hfHubCache: 'none',
  promptCharsPerToken: '3.5',
  promptHashSalt: 'every-source-salt',
  gpuHourCost: '2.5',
  energyPrice: '0.12',
  currency: 'EUR',
  energyPrefillRate: '25000',
};
const SECRETS = new Set(['tenantSalt', 'promptHashSalt']);
/** The upstream of the lower sources when a higher one sets it (it has no default). */
const OTHER_UPSTREAM = 'https://127.0.0.1:3';

type Source = 'flag' | 'env' | 'file' | 'default';

/** What --print-config should show for a raw value: the table's own parse, as plain data. */
function shown(key: string, raw: string): unknown {
  if (SECRETS.has(key)) return raw === '' ? '' : '<redacted>';
  // The tokenizer list prints as its flag spells it (name=path), so that the print reads back.
  if (key === 'tokenizers') return raw;
  const v = OPTIONS.find((o) => o.key === key)!.parse(raw);
  if (v && typeof v === 'object' && 'host' in v && 'port' in v) return `${(v as { host: string }).host}:${(v as { port: number }).port}`;
  return v;
}

function isSwitch(flag: string): boolean {
  return !flag.includes('<');
}

/** Command-line words that give `key` the value `raw`. */
function flagWords(key: string, raw: string): string[] {
  const spec = OPTIONS.find((o) => o.key === key)!;
  const flag = flagName(spec);
  if (!isSwitch(spec.flag)) return [flag, raw];
  const on = !flag.startsWith('--no-');
  assert.equal(String(on), raw, `${flag} can only set ${on}`);
  return [flag];
}

function defaults(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const o of OPTIONS) out[o.key] = o.default ?? OTHER_UPSTREAM;
  return out;
}

function writeFile(values: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'infermeter-every-source-'));
  const path = join(dir, 'infermeter.yaml');
  writeFileSync(path, stringify(values));
  return path;
}

interface Printed {
  values: Record<string, unknown>;
  sources: Record<string, string>;
  text: string;
}

function printConfig(args: string[], env: Record<string, string>): Printed {
  const r = spawnSync(process.execPath, [CLI, ...args, '--print-config'], { encoding: 'utf8', env: { PATH: process.env['PATH'], ...env }, timeout: 20_000 });
  assert.equal(r.status, 0, `--print-config failed: ${r.stderr}`);
  const values = parseYaml(r.stdout) as Record<string, unknown>;
  const sources: Record<string, string> = {};
  for (const line of r.stdout.split('\n')) {
    const m = /^(\w+): .* # (flag|env|file|default)\b/.exec(line);
    if (m) sources[m[1]!] = m[2]!;
    const f = /^# config file: .* \((flag|env) /.exec(line);
    if (f) sources['configFile'] = f[1]!;
  }
  return { values, sources, text: r.stdout };
}

function check(p: Printed, expected: Record<string, string>, source: Source, only?: (key: string) => boolean): void {
  const wrong: string[] = [];
  for (const o of OPTIONS) {
    if (only && !only(o.key)) continue;
    const want = shown(o.key, expected[o.key]!);
    if (JSON.stringify(p.values[o.key]) !== JSON.stringify(want)) wrong.push(`${o.key}: printed ${JSON.stringify(p.values[o.key])}, expected ${JSON.stringify(want)} from ${source}`);
    if (p.sources[o.key] !== source) wrong.push(`${o.key}: source ${p.sources[o.key]}, expected ${source}`);
  }
  assert.deepEqual(wrong, [], p.text);
  assert.doesNotMatch(p.text, /pepper-not-to-be-printed/, 'secrets are redacted');
}

test('SAMPLES covers the whole flag table, each with a valid value that is not the default', () => {
  assert.deepEqual(Object.keys(SAMPLES).sort(), OPTIONS.map((o) => o.key).sort(), 'a flag without a sample row (or a row without a flag)');
  for (const o of OPTIONS) {
    assert.notDeepEqual(shown(o.key, SAMPLES[o.key]!), o.default === undefined ? undefined : shown(o.key, o.default), `${o.key}: the sample must differ from the default`);
  }
});

test('nothing given: every setting reads its default, and says so', () => {
  const p = printConfig(['--upstream', OTHER_UPSTREAM], {});
  check(p, defaults(), 'default', (k) => k !== 'upstream' && k !== 'engineMetrics' && k !== 'injectUsage' && k !== 'tenantFrom');
  // Defaults derived from other settings.
  assert.equal(p.values['engineMetrics'], `${OTHER_UPSTREAM}/metrics`);
  assert.equal(p.values['injectUsage'], true);
  assert.equal(p.values['tenantFrom'], 'none');
  assert.equal(p.sources['upstream'], 'flag');
});

test('the config file alone sets every setting', () => {
  const file = writeFile(SAMPLES);
  check(printConfig(['--config', file], {}), SAMPLES, 'file');
});

test('the environment beats the file, for every setting', () => {
  const file = writeFile(defaults());
  const env = Object.fromEntries(OPTIONS.map((o) => [envName(o), SAMPLES[o.key]!]));
  check(printConfig(['--config', file], env), SAMPLES, 'env');
});

test('a flag beats the environment and the file, for every setting (switches and --no-* included)', () => {
  const file = writeFile(defaults());
  const env = Object.fromEntries(OPTIONS.map((o) => [envName(o), defaults()[o.key]!]));
  const args = ['--config', file, ...OPTIONS.flatMap((o) => flagWords(o.key, SAMPLES[o.key]!))];
  check(printConfig(args, env), SAMPLES, 'flag');
});

test('a --no-* switch given, and its environment variable set: the flag wins; unset, the environment wins over the file', () => {
  const file = writeFile({ ...defaults(), collectorHost: 'false' });
  const p = printConfig(['--config', file, '--no-collector.gpu'], { INFERMETER_COLLECTOR_GPU: 'true', INFERMETER_COLLECTOR_HOST: 'true' });
  assert.equal(p.values['collectorGpu'], false);
  assert.equal(p.sources['collectorGpu'], 'flag');
  assert.equal(p.values['collectorHost'], true);
  assert.equal(p.sources['collectorHost'], 'env');
});

test('--config itself: from the flag, or from INFERMETER_CONFIG', () => {
  const file = writeFile({ upstream: OTHER_UPSTREAM, engine: 'tgi' });
  const viaEnv = printConfig([], { INFERMETER_CONFIG: file });
  assert.equal(viaEnv.values['engine'], 'tgi');
  assert.equal(viaEnv.sources['configFile'], 'env');
  const viaFlag = printConfig(['--config', file], {});
  assert.equal(viaFlag.sources['configFile'], 'flag');
});
