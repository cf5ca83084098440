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
