/**
 * Every subcommand that reads a config file validates all of it with the schema `serve`
 * uses, and stops with the same message (exit 2): rules, bench, demo and serve alike.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../helpers.js';

const CLI = `${ROOT}dist/src/cli.js`;
const dir = mkdtempSync(join(tmpdir(), 'infermeter-strict-'));

function run(args: string[]): { status: number | null; stderr: string; stdout: string } {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', env: { PATH: process.env['PATH'] }, timeout: 15_000 });
  return { status: r.status, stderr: r.stderr, stdout: r.stdout };
}

test('rules --config with a Prometheus rule file (not an infermeter config) exits 2 naming the unknown key', () => {
  const r = run(['rules', '--config', `${ROOT}deploy/prometheus/rules.yml`]);
  assert.equal(r.status, 2, r.stdout.slice(0, 200));
  assert.equal(r.stdout, '', 'no rules printed');
  assert.match(r.stderr, /^infermeter: invalid configuration: --config .*rules\.yml: unknown key\(s\): groups \(expected keys of the flag table, slos, buckets or upstreams\)\n$/);
});

const bad: [string, string, RegExp][] = [
  ['unknown keys', 'slos:\n  default:\n    ttft: 1s\nupstrem: http://x\ntennants: 3\n', /--config \S+: unknown key\(s\): upstrem, tennants/],
  ['a bad value of a flag key', 'engine: gpt\n', /--engine \(config key engine in \S+\): expected one of vllm/],
  ['a bad SLO', 'slos:\n  default:\n    ttft: soon\n', /--config \S+: slos\.default\.ttft: expected a duration/],
];

for (const [what, yaml, message] of bad) {
  test(`${what}: rules, bench, demo and serve stop with the same message, exit 2`, () => {
    const file = join(dir, `${what.replace(/\W+/g, '-')}.yml`);
    writeFileSync(file, yaml);
    const runs = {
      rules: run(['rules', '--config', file]),
      bench: run(['bench', '--target', 'http://127.0.0.1:1', '--config', file]),
      demo: run(['demo', '--listen', '127.0.0.1:0', '--metrics-listen', '127.0.0.1:0', '--config', file]),
      serve: run(['serve', '--upstream', 'http://127.0.0.1:1', '--config', file]),
    };
    const lines = new Set<string>();
    for (const [cmd, r] of Object.entries(runs)) {
      assert.equal(r.status, 2, `${cmd}: ${r.stderr}`);
      assert.match(r.stderr, message, cmd);
      lines.add(r.stderr);
    }
    assert.equal(lines.size, 1, `one message for all: ${[...lines].join(' | ')}`);
  });
}

test('rules --config with a valid infermeter config still prints rules', () => {
  const file = join(dir, 'ok.yml');
  writeFileSync(file, 'upstream: http://127.0.0.1:8000\nlogLevel: debug\nslos:\n  default:\n    ttft: 2s\n');
  const r = run(['rules', '--config', file]);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /groups:/);
});
