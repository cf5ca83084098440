/**
 * Ctrl-C as a terminal sends it: SIGINT to the whole process group. The children
 * (nvidia-smi dmon, here the fake one as a real process) are infermeter's to stop, in order,
 * so a clean shutdown logs no warning and no error, and exits 0: for the demo and for serve.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { request } from 'undici';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.js';
import { ROOT, scrape, sumSamples } from '../helpers.js';

const FAKE_NVIDIA_SMI = `${ROOT}bin/fake-nvidia-smi`;

let upstream: FakeUpstream;
before(async () => {
  upstream = await startFakeUpstream();
});
after(() => upstream.close());

/** Starts `args` as the leader of its own process group (as a shell does for a foreground job). */
function startGroup(args: string[]): { child: ChildProcess; output: () => string } {
  const child = spawn(process.execPath, [`${ROOT}dist/src/cli.js`, ...args], { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  return { child, output: () => out };
}

async function waitFor(output: () => string, pattern: RegExp, child: ChildProcess, timeoutMs = 30_000): Promise<RegExpExecArray> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const m = pattern.exec(output());
    if (m) return m;
    assert.ok(Date.now() < deadline, `no ${pattern} in time:\n${output()}`);
    assert.equal(child.exitCode, null, `exited early:\n${output()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Log lines at warn (40) or above, and any line that reads as a child failing. */
function complaints(output: string): string[] {
  return output.split('\n').filter((l) => /"level":(4|5|6)0/.test(l) || /restarting after backoff|dmon ended/.test(l));
}

async function ctrlC(child: ChildProcess): Promise<number | null> {
  const exit = once(child, 'exit') as Promise<[number | null]>;
  process.kill(-child.pid!, 'SIGINT');
  const [code] = await exit;
  return code;
}

test('the demo: Ctrl-C (SIGINT to the process group) stops everything without a warning, exit 0', async () => {
  const { child, output } = startGroup(['demo', '--listen', '127.0.0.1:0', '--metrics-listen', '127.0.0.1:0', '--rates', '8', '--summary-every', '1s']);
  try {
    await waitFor(output, /done [1-9][0-9.]* req\/s/, child);
    const metricsUrl = /infermeter \/metrics\s+(\S+)/.exec(output())![1]!;
    assert.equal(sumSamples((await scrape(metricsUrl)).samples, 'infermeter_collector_up', { collector: 'gpu' }), 1, 'the fake nvidia-smi dmon is running');
    assert.equal(await ctrlC(child), 0);
    assert.match(output(), /demo stopped/);
    assert.deepEqual(complaints(output()), []);
  } finally {
    if (child.exitCode === null) process.kill(-child.pid!, 'SIGKILL');
  }
});

test('serve with nvidia-smi dmon running and a stream in flight: Ctrl-C to the process group drains it and exits 0 without a warning', async () => {
  const { child, output } = startGroup(['--upstream', upstream.url, '--listen', '127.0.0.1:0', '--metrics-listen', '127.0.0.1:0', '--nvidia-smi', FAKE_NVIDIA_SMI, '--no-collector.engine', '--no-collector.host']);
  try {
    const m = await waitFor(output, /"metrics":"(127\.0\.0\.1:\d+)"/, child);
    const metricsUrl = `http://${m[1]}/metrics`;
    const deadline = Date.now() + 15_000;
    while (sumSamples((await scrape(metricsUrl)).samples, 'infermeter_collector_up', { collector: 'gpu' }) !== 1) {
      assert.ok(Date.now() < deadline, 'the GPU collector never came up');
      await new Promise((r) => setTimeout(r, 100));
    }
    // A drain that takes a while: the children outlive the signal by as long.
    const proxy = /"proxy":"(127\.0\.0\.1:\d+)"/.exec(output())![1]!;
    const res = await request(`http://${proxy}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'fake-model', stream: true, fake: { schedule: { firstMs: 5, chunks: 30, gapMs: 50 } } }) });
    const text = res.body.text();
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(await ctrlC(child), 0);
    assert.match(await text, /tok29[\s\S]*\[DONE\]/, 'the stream in flight finished');
    assert.match(output(), /"msg":"stopped"/);
    assert.deepEqual(complaints(output()), []);
  } finally {
    if (child.exitCode === null) process.kill(-child.pid!, 'SIGKILL');
  }
});
