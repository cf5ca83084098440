/**
 * README: "A worker that dies is forked again (backoff 100 ms to 5 s)". This test process is
 * the cluster primary (--workers 2 in process); it kills the newest worker (always younger
 * than the 30 s after which a worker's death resets the backoff) as soon as it is forked,
 * eight times, and times kill → next fork. The delays must follow 100, 200, 400, 800,
 * 1600, 3200 ms and then stay at 5 s. Timers only fire late, so each delay is at least its
 * step (1 ms for timer rounding); a loaded machine can only make it longer, so the ceiling is
 * loose (the step after next): a backoff that stopped doubling fails the floor, one that kept
 * doubling past 5 s fails the last ceiling.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import cluster, { type Worker } from 'node:cluster';
import { once } from 'node:events';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.js';
import { startProxy, type TestProxy } from '../helpers.js';

let upstream: FakeUpstream;
let proxy: TestProxy;
before(async () => {
  upstream = await startFakeUpstream();
  proxy = await startProxy({ upstream: upstream.url, workers: '2', shutdownTimeout: '2s' });
});
after(async () => {
  await proxy.close();
  await upstream.close();
});

const live = () => Object.values(cluster.workers ?? {}).filter((w): w is Worker => !!w && !w.isDead());

test('a dead worker is forked again after 100 ms, doubling to 5 s', { timeout: 90_000 }, async () => {
  const expected = [100, 200, 400, 800, 1600, 3200, 5000, 5000];
  const delays: number[] = [];
  for (let i = 0; i < expected.length; i++) {
    const victim = live().sort((a, b) => b.id - a.id)[0];
    assert.ok(victim, `a live worker before kill ${i + 1}`);
    const forked = once(cluster, 'fork');
    const t0 = performance.now();
    victim.process.kill('SIGKILL');
    await forked;
    delays.push(performance.now() - t0);
  }
  expected.forEach((step, i) => {
    assert.ok(delays[i]! >= step - 1, `re-fork ${i + 1} after ${delays[i]!.toFixed(0)} ms, expected at least ${step} ms (${delays.map((d) => d.toFixed(0)).join(', ')})`);
    const ceiling = i + 2 < expected.length ? expected[i + 2]! : 2 * 5000;
    assert.ok(delays[i]! < ceiling + 1000, `re-fork ${i + 1} after ${delays[i]!.toFixed(0)} ms, expected under ${ceiling + 1000} ms`);
  });
  assert.equal(live().length, 2, 'two workers again after the last fork');
});
