/**
 * `--print-config` on a mixed configuration (some settings from flags, some from the
 * environment, some from the file, the rest defaults): each value with its source, secrets
 * redacted (the tenant salt; a password in the upstream URL never shows), valid YAML that, secrets aside,
 * gives the same settings when used as a config file; exit 0 without starting anything. The
 * daemon logs the same at info when it starts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { CLI, InfermeterProcess } from '../fakes/infermeter-process.js';
import { resolveConfig } from '../../src/config.js';
import { configLogFields } from '../../src/daemon/print-config.js';

const dir = mkdtempSync(join(tmpdir(), 'infermeter-print-'));
const file = join(dir, 'mixed.yaml');
writeFileSync(file, [
  'engine: sglang',
  'modelsRefresh: 15s',
  'tenantSalt: file-salt-secret',
  'collectorHost: false',
  'slos:',
  '  default:',
  '    ttft: 750ms',
  '',
].join('\n'));

function print(args: string[], env: Record<string, string>): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', env: { PATH: process.env['PATH'], ...env }, timeout: 20_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const ARGS = ['--config', file, '--upstream', 'http://admin:hunter2@127.0.0.1:8000', '--listen', '127.0.0.1:18081', '--no-collector.gpu', '--print-config'];
const ENV = { INFERMETER_LOG_LEVEL: 'warn', INFERMETER_TENANT_SALT: 'env-salt-secret', INFERMETER_COLLECTOR_ENGINE: 'false' };

test('--print-config: each value with its source, secrets redacted, exit 0', () => {
  const r = print(ARGS, ENV);
  assert.equal(r.code, 0, r.stderr);
  const line = (key: string) => r.stdout.split('\n').find((l) => l.startsWith(`${key}: `)) ?? '';
  assert.equal(line('upstream'), 'upstream: http://127.0.0.1:8000 # flag --upstream'); // the URL's credentials are not kept at all
  assert.equal(line('listen'), 'listen: 127.0.0.1:18081 # flag --listen');
  assert.equal(line('collectorGpu'), 'collectorGpu: false # flag --no-collector.gpu');
  assert.equal(line('logLevel'), 'logLevel: warn # env INFERMETER_LOG_LEVEL');
  assert.equal(line('collectorEngine'), 'collectorEngine: false # env INFERMETER_COLLECTOR_ENGINE');
  // The environment's salt beats the file's; either way it is never printed.
  assert.equal(line('tenantSalt'), 'tenantSalt: <redacted> # env INFERMETER_TENANT_SALT');
  assert.equal(line('engine'), `engine: sglang # file ${file}`);
  assert.equal(line('modelsRefresh'), `modelsRefresh: 15 # file ${file}`);
  assert.equal(line('collectorHost'), `collectorHost: false # file ${file}`);
  assert.equal(line('metricsListen'), 'metricsListen: 0.0.0.0:9464 # default');
  assert.equal(line('engineMetrics'), 'engineMetrics: http://127.0.0.1:8000/metrics # default');
  assert.match(r.stdout, new RegExp(`^# config file: ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(flag --config\\)$`, 'm'));
  assert.match(r.stdout, /^# slos \(file .*mixed\.yaml\), thresholds in seconds:$/m);
  assert.deepEqual((parseYaml(r.stdout) as { slos: unknown }).slos, { objective: 0.99, window: '30d', default: { ttft: 0.75 }, models: {}, prompt_classes: [] });
  for (const secret of ['hunter2', 'env-salt-secret', 'file-salt-secret']) assert.ok(!r.stdout.includes(secret), `${secret} printed`);
  assert.equal(r.stderr, '');
});

test('--print-config output, saved as a config file, gives the same settings', () => {
  const first = print(['--upstream', 'http://127.0.0.1:8000', '--engine', 'tgi', '--print-config'], { INFERMETER_WORKERS: '3' });
  assert.equal(first.code, 0, first.stderr);
  const saved = join(dir, 'saved.yaml');
  writeFileSync(saved, first.stdout);
  const again = print(['--config', saved, '--print-config'], {});
  assert.equal(again.code, 0, again.stderr);
  const values = (text: string) => parseYaml(text) as Record<string, unknown>;
  assert.deepEqual(values(again.stdout), values(first.stdout));
  assert.equal(values(again.stdout)['workers'], 3);
});

test('--print-config with upstreams: every upstream with its own and its inherited settings; saved, the same settings', () => {
  const multi = join(dir, 'upstreams.yaml');
  writeFileSync(multi, [
    'engine: sglang',
    'headersTimeout: 90s',
    'upstreams:',
    '  - { name: big, url: "http://127.0.0.1:8001", gpus: [0, 1], headersTimeout: 30s }',
    '  - { name: small, url: "http://127.0.0.1:8002", engine: vllm, connections: 8, engineMetrics: "http://127.0.0.1:9002/metrics" }',
    '',
  ].join('\n'));
  const first = print(['--config', multi, '--print-config'], {});
  assert.equal(first.code, 0, first.stderr);
  const values = (text: string) => parseYaml(text) as Record<string, unknown>;
  const printed = values(first.stdout);
  const list = printed['upstreams'] as Record<string, unknown>[] | undefined;
  assert.ok(Array.isArray(list), `an upstreams list in:\n${first.stdout}`);
  // From the file: each entry's own keys; the rest from the file's globals (engine, headersTimeout)
  // or README's flag defaults (--upstream-connections 4096, engineMetrics <url>/metrics).
  assert.deepEqual(list.map((u) => [u['name'], u['url'], u['engine'], u['gpus'], u['headersTimeout'], u['connections'], u['engineMetrics']]), [
    ['big', 'http://127.0.0.1:8001', 'sglang', ['0', '1'], 30, 4096, 'http://127.0.0.1:8001/metrics'],
    ['small', 'http://127.0.0.1:8002', 'vllm', [], 90, 8, 'http://127.0.0.1:9002/metrics'],
  ]);
  assert.equal(printed['upstream'], undefined, 'upstream and upstreams together would be refused');
  assert.match(first.stdout, new RegExp(`^upstreams: # file ${multi.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm'));
  const saved = join(dir, 'upstreams-saved.yaml');
  writeFileSync(saved, first.stdout);
  const again = print(['--config', saved, '--print-config'], {});
  assert.equal(again.code, 0, again.stderr);
  assert.deepEqual(values(again.stdout), printed);
  // The startup line carries the same list.
  const logged = configLogFields(resolveConfig({ config: multi }, {}));
  assert.deepEqual((logged.settings['upstreams'] as { name: string }[]).map((u) => u.name), ['big', 'small']);
  assert.equal(logged.from['upstreams'], 'file');
});

test('a bad value with --print-config is still the usage error it always is (exit 2)', () => {
  const r = print(['--upstream', 'http://127.0.0.1:8000', '--engine', 'gpt', '--print-config'], {});
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--engine: expected one of/);
});

test('at start, one info line holds the effective configuration with its sources, secrets redacted', async () => {
  const im = InfermeterProcess.forUpstream('http://127.0.0.1:9', ['--config', file], { INFERMETER_TENANT_SALT: 'env-salt-secret' });
  try {
    await im.start();
    const lines = im.logs.filter((l) => l.msg === 'effective configuration');
    assert.equal(lines.length, 1);
    const l = lines[0]!;
    assert.equal(l.level, 30);
    const settings = l['settings'] as Record<string, unknown>;
    const from = l['from'] as Record<string, string>;
    assert.equal(settings['engine'], 'sglang');
    assert.equal(from['engine'], 'file');
    assert.equal(from['upstream'], 'flag');
    assert.equal(from['tenantSalt'], 'env');
    assert.equal(settings['tenantSalt'], '<redacted>');
    assert.equal(from['metricsListen'], 'flag');
    assert.equal(from['bodyLimit'], undefined, 'defaults are not listed in from');
    assert.ok(!JSON.stringify(im.logs).includes('salt-secret'));
  } finally {
    await im.stop();
  }
});
