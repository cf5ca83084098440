/** A broken config stops startup with the flag's name and what was expected. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../helpers.js';

const CLI = `${ROOT}dist/src/cli.js`;

function run(args: string[], env: NodeJS.ProcessEnv = {}): { status: number | null; stderr: string } {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', env: { PATH: process.env['PATH'], ...env }, timeout: 10_000 });
  return { status: r.status, stderr: r.stderr };
}

const cases: [string, string[], NodeJS.ProcessEnv, RegExp][] = [
  ['missing upstream', [], {}, /--upstream: is required/],
  ['bad upstream URL', ['--upstream', 'not a url'], {}, /--upstream: expected an http\(s\) URL/],
  ['bad engine', ['--upstream', 'http://127.0.0.1:1', '--engine', 'gpt'], {}, /--engine: expected one of vllm, sglang/],
  ['bad listen', ['--upstream', 'http://127.0.0.1:1', '--listen', 'localhost:http'], {}, /--listen: expected HOST:PORT/],
  ['bad duration from env', ['--upstream', 'http://127.0.0.1:1'], { INFERMETER_IDLE_TIMEOUT: 'soon' }, /--idle-timeout \(env INFERMETER_IDLE_TIMEOUT\): expected a duration/],
  ['bad bool', ['--upstream', 'http://127.0.0.1:1', '--inject-usage', 'maybe'], {}, /--inject-usage: expected true or false/],
  ['bad size', ['--upstream', 'http://127.0.0.1:1', '--body-limit', 'lots'], {}, /--body-limit: expected a size/],
  ['negative GPU-hour price', ['--upstream', 'http://127.0.0.1:1', '--gpu-hour-cost=-2'], {}, /--gpu-hour-cost: a price cannot be negative/],
  ['negative energy price from env', ['--upstream', 'http://127.0.0.1:1'], { INFERMETER_ENERGY_PRICE: '-0.1' }, /--energy-price \(env INFERMETER_ENERGY_PRICE\): a price cannot be negative/],
  ['a price without a currency', ['--upstream', 'http://127.0.0.1:1', '--energy-price', '0.2', '--currency', ''], {}, /--currency: is required with a price/],
];

for (const [name, args, env, pattern] of cases) {
  test(`${name}: exits 2 naming the flag`, () => {
    const r = run(args, env);
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, pattern);
  });
}

test('config file: bad values and unknown keys name the key', () => {
  const dir = mkdtempSync(join(tmpdir(), 'infermeter-cfg-'));
  const file = join(dir, 'c.yaml');
  writeFileSync(file, 'upstream: http://127.0.0.1:1\nengine: nope\n');
  assert.match(run(['--config', file]).stderr, /--engine \(config key engine in .*c\.yaml\): expected one of/);
  writeFileSync(file, 'upstream: http://127.0.0.1:1\nlisten_port: 3\n');
  assert.match(run(['--config', file]).stderr, /unknown key\(s\): listen_port/);
  writeFileSync(file, 'upstream: http://127.0.0.1:1\nslos:\n  default:\n    ttft: fast\n');
  assert.match(run(['--config', file]).stderr, /slos\.default\.ttft: expected a duration/);
  writeFileSync(file, 'upstream: http://127.0.0.1:1\nslos:\n  objective: 2\n');
  assert.match(run(['--config', file]).stderr, /slos\.objective/);
  writeFileSync(file, 'upstreams:\n  - { name: a, url: "http://127.0.0.1:1", gpuHourCost: -1 }\n');
  assert.match(run(['--config', file]).stderr, /gpuHourCost.*a price cannot be negative/);
  writeFileSync(file, 'currency: ""\nupstreams:\n  - { name: a, url: "http://127.0.0.1:1", energyPrice: 0.3 }\n');
  assert.match(run(['--config', file]).stderr, /--currency: is required with a price/);
});

test('a port already in use stops startup naming --listen', async () => {
  const { createServer } = await import('node:net');
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  try {
    const r = run(['--upstream', 'http://127.0.0.1:1', '--listen', `127.0.0.1:${port}`, '--metrics-listen', '127.0.0.1:0', '--no-collector.gpu', '--no-collector.engine', '--no-collector.host']);
    assert.equal(r.status, 1);
    assert.match(r.stderr, /--listen 127\.0\.0\.1:\d+: cannot listen/);
  } finally {
    s.close();
  }
});
