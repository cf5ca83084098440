/**
 * One exit contract for every subcommand: 2 for every usage or configuration error (the flag
 * parser's own included), 1 for runtime failures (a port in use, a file that cannot be read),
 * 0 for help and version; each time exactly one line on stderr, `infermeter: …`, and no stack
 * trace or crash message before it (`--workers` included).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI } from '../fakes/infermeter-process.js';

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(args: string[], env: Record<string, string> = {}): Promise<Result> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: { PATH: process.env['PATH'], ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** One line, ours, naming the cause; nothing that reads like a crash. */
function assertOneLine(r: Result, pattern: RegExp): void {
  const lines = r.stderr.trimEnd().split('\n');
  assert.equal(lines.length, 1, `one line on stderr, got:\n${r.stderr}`);
  assert.match(lines[0]!, /^infermeter: /);
  assert.match(lines[0]!, pattern);
  for (const out of [r.stdout, r.stderr]) {
    assert.doesNotMatch(out, /\n\s+at |Cannot read properties|crashed|TypeError|"level":60/, `no stack or crash line:\n${out}`);
  }
}

const UP = ['--upstream', 'http://127.0.0.1:9'];
const QUIET = ['--metrics-listen', '127.0.0.1:0', '--no-collector.gpu', '--no-collector.engine', '--no-collector.host'];
const dir = mkdtempSync(join(tmpdir(), 'infermeter-exit-'));
const badFile = join(dir, 'bad.yaml');
writeFileSync(badFile, 'upstream: http://127.0.0.1:9\nengine: nope\n');
const kebabFile = join(dir, 'kebab.yaml');
writeFileSync(kebabFile, 'upstream: http://127.0.0.1:9\nmetrics-listen: 127.0.0.1:0\n');

const usage: [string, string[], Record<string, string>, RegExp][] = [
  ['serve: unknown flag', ['--bogus'], {}, /unknown option '--bogus'/],
  ['serve: a flag without its value', [...UP, '--listen'], {}, /option '--listen <host:port>' argument missing/],
  ['serve: too many arguments', ['serve', 'extra'], {}, /too many arguments/],
  ['serve: a bad value', [...UP, '--engine', 'gpt'], {}, /invalid configuration: --engine: expected one of/],
  ['serve: a bad environment value', UP, { INFERMETER_IDLE_TIMEOUT: 'soon' }, /--idle-timeout \(env INFERMETER_IDLE_TIMEOUT\): expected a duration/],
  ['serve: a bad config file value', ['--config', badFile], {}, /--engine \(config key engine in .*bad\.yaml\): expected one of/],
  ['serve: a required setting missing', [], {}, /--upstream: is required/],
  ['serve: --upstream is its own --listen', ['--upstream', 'http://localhost:18080', '--listen', '0.0.0.0:18080'], {}, /--upstream: http:\/\/localhost:18080 is infermeter's own --listen 0\.0\.0\.0:18080: requests would loop back/],
  ['serve: --metrics-listen on the --listen address', [...UP, '--listen', '127.0.0.1:18080', '--metrics-listen', '0.0.0.0:18080'], {}, /--metrics-listen: 0\.0\.0\.0:18080 is the proxy's --listen 127\.0\.0\.1:18080/],
  ['serve: an unknown config key, the nearest named', ['--config', kebabFile], {}, /unknown key\(s\): metrics-listen \(.*metrics-listen: did you mean metricsListen\?\)/],
  ['rules: an unknown config key, the nearest named', ['rules', '--config', kebabFile], {}, /did you mean metricsListen\?/],
  ['rules: --config missing', ['rules'], {}, /required option '--config <file>' not specified/],
  ['rules: a choice not offered', ['rules', '--config', badFile, '--format', 'x'], {}, /argument 'x' is invalid/],
  ['simulate: unknown flag', ['simulate', '--bogus'], {}, /unknown option '--bogus'/],
  ['simulate: a bad value', ['simulate', '--speed', 'fast'], {}, /--speed/],
  ['demo: a bad value', ['demo', '--rates', 'x'], {}, /--rates: expected positive numbers/],
  ['demo: a step of no length', ['demo', '--step', '0'], {}, /--step: expected a duration above 0/],
  ['demo: an arrival kind not offered', ['demo', '--arrivals', 'bursty'], {}, /argument 'bursty' is invalid/],
  ['bench: unknown flag', ['bench', '--bogus'], {}, /unknown option '--bogus'/],
  ['bench: --target missing', ['bench'], {}, /--target: required/],
  ['bench compare: an argument missing', ['bench', 'compare', 'a'], {}, /missing required argument 'b'/],
];

for (const [what, args, env, pattern] of usage) {
  test(`${what}: exit 2, one line`, async () => {
    const r = await run(args, env);
    assert.equal(r.code, 2, r.stderr);
    assertOneLine(r, pattern);
  });
}

for (const args of [['--help'], ['--version'], ['rules', '--help'], ['bench', '--help']]) {
  test(`${args.join(' ')}: exit 0`, async () => {
    const r = await run(args);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, '');
  });
}

async function busyPort(): Promise<{ server: Server; port: number }> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as { port: number }).port };
}

for (const workers of ['1', '2']) {
  test(`--workers ${workers}, the port in use: exit 1, one line naming --listen and EADDRINUSE, nothing before it`, async () => {
    const { server, port } = await busyPort();
    try {
      const r = await run([...UP, ...QUIET, '--listen', `127.0.0.1:${port}`, '--workers', workers]);
      assert.equal(r.code, 1, r.stderr);
      assertOneLine(r, new RegExp(`--listen 127\\.0\\.0\\.1:${port}: cannot listen: .*EADDRINUSE`));
      assert.equal(r.stdout.split('\n').filter((l) => /"level":(50|60)/.test(l)).length, 0, r.stdout);
    } finally {
      server.close();
    }
  });
}

test('the metrics port in use: exit 1, one line naming --metrics-listen', async () => {
  const { server, port } = await busyPort();
  try {
    const r = await run([...UP, '--listen', '127.0.0.1:0', '--metrics-listen', `127.0.0.1:${port}`, '--no-collector.gpu', '--no-collector.engine', '--no-collector.host']);
    assert.equal(r.code, 1, r.stderr);
    assertOneLine(r, /--metrics-listen.*EADDRINUSE/);
  } finally {
    server.close();
  }
});

const runtime: [string, string[], RegExp][] = [
  ['--config naming a file that does not exist', ['--config', join(dir, 'missing.yaml')], /--config: cannot read .*missing\.yaml: ENOENT/],
  ['rules --config naming a file that does not exist', ['rules', '--config', join(dir, 'missing.yaml')], /--config: cannot read .*missing\.yaml/],
  ['bench compare naming a report that does not exist', ['bench', 'compare', join(dir, 'nope'), join(dir, 'nope')], /^infermeter: bench compare: cannot read .*nope: no such file or directory \(ENOENT\)$/],
  ['bench compare naming a file that is no report', ['bench', 'compare', badFile, badFile], /^infermeter: bench compare: .*bad\.yaml: not an infermeter bench report$/],
  ['bench against a target nothing listens on', ['bench', '--target', 'http://127.0.0.1:9', '--out', join(dir, 'dead-target')], /^infermeter: bench: cannot reach --target http:\/\/127\.0\.0\.1:9: .*ECONNREFUSED/],
  ['--tls-cert naming a file that does not exist', [...UP, '--tls-cert', join(dir, 'missing.crt'), '--tls-key', join(dir, 'missing.key')], /--tls-cert: cannot read .*missing\.crt/],
];

for (const [what, args, pattern] of runtime) {
  test(`${what}: exit 1 (a runtime failure, not a usage error), one line`, async () => {
    const r = await run(args);
    assert.equal(r.code, 1, r.stderr);
    assertOneLine(r, pattern);
    assert.doesNotMatch(r.stderr, /invalid configuration/);
  });
}

test('bench against a dead target writes no report', () => {
  assert.equal(existsSync(join(dir, 'dead-target')), false, 'no "infermeter bench: –" report for a target that never answered');
});
