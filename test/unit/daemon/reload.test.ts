import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveConfig } from '../../../src/config.js';
import { reresolve } from '../../../src/daemon/reload.js';

const dir = mkdtempSync(join(tmpdir(), 'infermeter-reresolve-'));

test('reresolve: same flags and environment, the file read again; live settings, restart-only flags and kept buckets named', () => {
  const file = join(dir, 'a.yml');
  writeFileSync(file, 'models: [a]\nslos:\n  default:\n    ttft: 1s\n');
  const env = { INFERMETER_ENGINE: 'sglang', HOME: '/nowhere' };
  const cfg = resolveConfig({ upstream: 'http://127.0.0.1:8000', config: file, shutdownTimeout: '5s' }, env);
  assert.deepEqual(cfg.sources.env, { INFERMETER_ENGINE: 'sglang' }, 'only INFERMETER_* is kept');
  writeFileSync(file, 'models: [a, b]\nlogLevel: debug\nbodyLimit: 1mb\nshutdownTimeout: 9s\nengine: vllm\nslos:\n  default:\n    ttft: 3ms\n');
  const r = reresolve(cfg);
  assert.ok(r.ok);
  assert.deepEqual(r.live.models, ['a', 'b']);
  assert.equal(r.live.logLevel, 'debug');
  assert.equal(r.live.slos.default.ttft, 0.003);
  // The flag (5s) and the environment (sglang) still win over the file, as at startup.
  assert.equal(r.next.shutdownTimeout, 5);
  assert.equal(r.next.engine, 'sglang');
  assert.deepEqual(r.restartNeeded, ['--body-limit']);
  assert.deepEqual(r.bucketsKept, ['ttft: 0.003 added at restart', 'ttft_by_prompt: 0.003 added at restart'], 'a new boundary a restart would add (1 s is a default boundary anyway)');
});

test('bucketsKept: in words, a threshold gone from one set only (0.06 stays a default TTFT boundary)', () => {
  const file = join(dir, 'gone.yml');
  writeFileSync(file, 'slos:\n  default:\n    ttft: 60ms\n');
  const cfg = resolveConfig({ upstream: 'http://127.0.0.1:8000', config: file }, {});
  writeFileSync(file, 'slos:\n  default:\n    ttft: 3ms\n');
  const r = reresolve(cfg);
  assert.ok(r.ok);
  assert.deepEqual(r.bucketsKept, ['ttft: 0.003 added at restart', 'ttft_by_prompt: 0.003 added at restart; 0.06 kept until restart']);
});

test('reresolve: a broken file is an outcome, not a throw, with the startup message', () => {
  const file = join(dir, 'b.yml');
  writeFileSync(file, 'slos: {}\n');
  const cfg = resolveConfig({ upstream: 'http://127.0.0.1:8000', config: file }, {});
  writeFileSync(file, 'slos:\n  default:\n    ttft: [1]\n');
  const r = reresolve(cfg);
  assert.equal(r.ok, false);
  assert.match(!r.ok ? r.error : '', /--config \S+b\.yml: slos\.default\.ttft/);
  writeFileSync(file, ': : not yaml');
  const y = reresolve(cfg);
  assert.match(!y.ok ? y.error : '', /^--config: \S+ is not valid YAML/);
});

test('reresolve: --tenant-limit is live; the tenant source and the prompt classes need a restart', () => {
  const file = join(dir, 'c.yml');
  writeFileSync(file, 'tenantHeader: x-tenant\ntenantLimit: 2\n');
  const cfg = resolveConfig({ upstream: 'http://127.0.0.1:8000', config: file }, {});
  writeFileSync(file, 'tenantHeader: x-tenant\ntenantFrom: api-key\ntenantLimit: 5\npromptTokensClasses: 100,1000\n');
  const r = reresolve(cfg);
  assert.ok(r.ok);
  assert.equal(r.live.tenantLimit, 5);
  // Turning api-key on brings the salt kept beside the config file: the salt in use changes too.
  assert.deepEqual(r.restartNeeded.sort(), ['--prompt-tokens-classes', '--tenant-from', '--tenant-salt']);
});

test('Reloader: one plan per reload, with the web config read again; the live settings move, restart-only flags stay named', async () => {
  const { Reloader } = await import('../../../src/daemon/reload.js');
  const file = join(dir, 'd.yml');
  const web = join(dir, 'web.yml');
  writeFileSync(file, 'models: [a]\n');
  writeFileSync(web, '');
  const cfg = resolveConfig({ upstream: 'http://127.0.0.1:8000', config: file, webConfigFile: web }, {});
  const reloader = new Reloader(cfg);
  writeFileSync(file, 'models: [a, b]\nbodyLimit: 1mb\n');
  const first = reloader.plan();
  assert.ok(first.ok);
  assert.deepEqual(Object.keys(first.live).sort(), ['logLevel', 'models', 'modelsRefresh', 'slos', 'tenantLimit'], 'only the live settings travel');
  assert.deepEqual(first.live.models, ['a', 'b']);
  assert.deepEqual(first.restartNeeded, ['--body-limit']);
  assert.equal(first.web?.file, web);
  const again = reloader.plan();
  assert.ok(again.ok);
  assert.deepEqual(again.restartNeeded, ['--body-limit'], 'still named: the running value is the startup one');
  writeFileSync(web, 'basic_auth_users:\n  "a:b": "x"\n');
  const bad = reloader.plan();
  assert.equal(bad.ok, false);
  assert.match(!bad.ok ? bad.error : '', /--web\.config\.file \S+web\.yml: basic_auth_users/);
});
