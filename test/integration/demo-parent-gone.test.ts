/**
 * The demo does not outlive whoever started it: `timeout 20 npm run demo` expiring (npm and its shell
 * die without passing the signal on), SIGHUP (a closed terminal) and a closed stdin pipe each
 * leave no process of the demo (the demo, the fake nvidia-smi it runs) one second later.
 * Processes are found by a marker in their environment, which every child inherits.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import { ROOT } from '../helpers.js';

const MARK = 'INFERMETER_DEMO_TEST_MARK';
const BANNER = /infermeter demo: open the live status page/;
/** Ephemeral ports, so the demo cannot collide with anything else running tests here. */
const PORTS = ['--listen', '127.0.0.1:0', '--metrics-listen', '127.0.0.1:0', '--rates', '8', '--step', '3s', '--summary-every', '1s'];

/** Pids of live processes (zombies aside) whose environment holds MARK=mark. */
function marked(mark: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      if (/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${name}/stat`, 'utf8'))) continue;
      if (readFileSync(`/proc/${name}/environ`, 'latin1').split('\0').includes(`${MARK}=${mark}`)) out.push(Number(name));
    } catch {
      // gone meanwhile, or not ours
    }
  }
  return out;
}

function describe(pids: number[]): string {
  return pids.map((p) => {
    try {
      return `${p}: ${readFileSync(`/proc/${p}/cmdline`, 'utf8').replace(/\0/g, ' ')}`;
    } catch {
      return `${p}: (gone)`;
    }
  }).join('\n');
}

function spawnMarked(command: string, args: string[], stdin: 'ignore' | 'pipe'): { child: ChildProcess; mark: string; out: () => string } {
  const mark = randomUUID();
  const child = spawn(command, args, { cwd: ROOT, env: { ...process.env, [MARK]: mark, FAKE_NVIDIA_SMI_GPUS: '1' }, stdio: [stdin, 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  return { child, mark, out: () => out };
}

async function waitFor(pattern: RegExp, out: () => string, child: ChildProcess, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!pattern.test(out())) {
    assert.ok(Date.now() < deadline, `no ${pattern} in time:\n${out()}`);
    assert.equal(child.exitCode, null, `exited early:\n${out()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The fake nvidia-smi runs as the demo's child: seen before, so "none left" means it was stopped. */
async function waitForChildren(mark: string, atLeast: number, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (marked(mark).length < atLeast) {
    assert.ok(Date.now() < deadline, `fewer than ${atLeast} marked processes: ${describe(marked(mark))}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function assertNoneLeftAfter1s(mark: string): Promise<void> {
  await new Promise((r) => setTimeout(r, 1000));
  const left = marked(mark);
  for (const p of left) process.kill(p, 'SIGKILL'); // never leave them to the next test
  assert.deepEqual(left, [], `left running 1 s later:\n${describe(left)}`);
}

/**
 * `npm run demo` builds first (tsc type-checks the whole tree even with nothing to emit: on a
 * loaded 2-core machine it was seen to take 20 s), so no fixed timeout is sure to fall after the
 * demo started. The timeout is long, and once the demo runs it is made to expire now: coreutils'
 * `timeout` counts down on SIGALRM, and on it does exactly what it does when time runs out
 * (SIGTERM to npm alone, exit 124). This replaced measuring a build first and waiting out
 * 20 s or more (about 20 s of the suite).
 */
test('timeout N npm run demo, expiring: nothing of the demo is left 1 s after it returns', { timeout: 240_000 }, async () => {
  const { child, mark, out } = spawnMarked('timeout', ['200', 'npm', 'run', 'demo', '--', ...PORTS], 'ignore');
  try {
    await waitFor(BANNER, out, child, 180_000);
    await waitForChildren(mark, 4, 5000); // timeout, npm, sh, the demo (and the fake nvidia-smi)
    child.kill('SIGALRM');
    const [code] = (await once(child, 'exit')) as [number];
    assert.equal(code, 124, `timeout ended it:\n${out()}`);
    await assertNoneLeftAfter1s(mark);
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
    for (const p of marked(mark)) process.kill(p, 'SIGKILL');
  }
});

for (const [how, stdin, end] of [
  ['SIGHUP (a closed terminal)', 'ignore', (c: ChildProcess) => c.kill('SIGHUP')],
  ['stdin closed (the parent\'s pipe)', 'pipe', (c: ChildProcess) => c.stdin!.end()],
] as const) {
  test(`${how}: the demo stops and leaves nothing 1 s later`, { timeout: 40_000 }, async () => {
    const { child, mark, out } = spawnMarked(process.execPath, [`${ROOT}dist/src/cli.js`, 'demo', ...PORTS], stdin);
    try {
      await waitFor(/done [0-9.]+ req\/s/, out, child, 25_000); // running, load and summaries included
      await waitForChildren(mark, 2, 5000); // the demo and at least one fake nvidia-smi
      end(child);
      const [code] = (await once(child, 'exit')) as [number];
      assert.equal(code, 0, out());
      assert.match(out(), /demo stopped \((SIGHUP|stdin closed)\)/);
      await assertNoneLeftAfter1s(mark);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      for (const p of marked(mark)) process.kill(p, 'SIGKILL');
    }
  });
}

test('stdin from /dev/null is not a parent going away: the demo keeps running', { timeout: 40_000 }, async () => {
  const { child, mark, out } = spawnMarked(process.execPath, [`${ROOT}dist/src/cli.js`, 'demo', ...PORTS], 'ignore');
  try {
    await waitFor(BANNER, out, child, 25_000);
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal(child.exitCode, null, out());
    child.kill('SIGTERM');
    await once(child, 'exit');
    await assertNoneLeftAfter1s(mark);
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
    for (const p of marked(mark)) process.kill(p, 'SIGKILL');
  }
});
