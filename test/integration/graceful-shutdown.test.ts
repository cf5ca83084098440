/** SIGTERM: stop accepting, let in-flight streams finish (up to --shutdown-timeout), exit 0. */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { request } from 'undici';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.js';
import { ROOT } from '../helpers.js';

let upstream: FakeUpstream;
before(async () => {
  upstream = await startFakeUpstream();
});
after(() => upstream.close());

async function startCli(extra: string[]): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, [`${ROOT}dist/src/cli.js`, '--upstream', upstream.url, '--listen', '127.0.0.1:0', '--metrics-listen', '127.0.0.1:0', '--no-collector.gpu', '--no-collector.engine', '--no-collector.host', ...extra], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  for await (const c of child.stdout!) {
    out += (c as Buffer).toString();
    const m = /"proxy":"127\.0\.0\.1:(\d+)"/.exec(out);
    if (m) return { child, port: Number(m[1]) };
  }
  throw new Error(`infermeter did not start: ${out}`);
}

/** A stream through the proxy; resolves once its headers arrived (it is in flight) with the rest of its text to come. */
async function startStream(port: number, chunks: number, gapMs: number): Promise<{ text: Promise<string> }> {
  const res = await request(`http://127.0.0.1:${port}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'fake-model', stream: true, fake: { schedule: { firstMs: 10, chunks, gapMs } } }),
  });
  return { text: res.body.text() };
}

test('an in-flight stream completes after SIGTERM, then the process exits 0', async () => {
  const { child, port } = await startCli(['--shutdown-timeout', '10s']);
  // SIGTERM once the stream is in flight (its headers came), not after a guess of 200 ms.
  const stream = await startStream(port, 40, 20); // ~800 ms
  child.kill('SIGTERM');
  const text = await stream.text;
  assert.match(text, /tok39/);
  assert.match(text, /\[DONE\]/);
  const [code] = (await once(child, 'exit')) as [number];
  assert.equal(code, 0);
});

test('a stream longer than --shutdown-timeout is cut at the deadline', async () => {
  const { child, port } = await startCli(['--shutdown-timeout', '300ms']);
  const closed0 = upstream.events.filter((e) => e.kind === 'closed-early').length;
  const stream = await startStream(port, 500, 10); // ~5 s
  const t = performance.now();
  child.kill('SIGTERM');
  await assert.rejects(stream.text);
  const cutAfter = performance.now() - t;
  const [code] = (await once(child, 'exit')) as [number];
  assert.equal(code, 0);
  // At the deadline, by the stream's own clocks rather than a wall-clock allowance for the exit:
  // not before the deadline, and before the upstream had sent the stream to its end.
  assert.ok(cutAfter >= 300 - 5, `cut ${cutAfter.toFixed(0)} ms after SIGTERM, before the 300 ms deadline`);
  assert.ok(upstream.events.filter((e) => e.kind === 'closed-early').length > closed0, 'the upstream saw the stream cut before its end');
  assert.ok(!upstream.events.some((e) => e.kind === 'finished' && e.at > t), 'no stream ran to its end after SIGTERM');
});
