/**
 * README: the metrics thread "runs at nice 10, so on a busy machine the kernel hands the CPU to
 * the proxy first". Linux keeps a nice value per thread: /proc/self/task/<tid>/stat, field 19.
 * Started in this process, the daemon's metrics thread must sit 10 above this (the proxy's)
 * thread, which keeps its own.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { startFakeUpstream } from '../fakes/upstream.js';
import { startProxy } from '../helpers.js';

function niceOf(tid: string): number {
  const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
  // Fields after the parenthesised name start at field 3 (state); nice is field 19.
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19 - 3]);
}
const niceByThread = () => new Map(readdirSync('/proc/self/task').map((tid) => [tid, niceOf(tid)]));

test('the metrics thread runs at nice 10 above the proxy thread, which keeps its own', { skip: process.platform !== 'linux' && 'per-thread nice is Linux only' }, async () => {
  const main = niceOf(String(process.pid));
  const before = niceByThread();
  const upstream = await startFakeUpstream();
  const proxy = await startProxy({ upstream: upstream.url });
  try {
    const after = niceByThread();
    assert.equal(after.get(String(process.pid)), main, 'the proxy (main) thread keeps its nice value');
    const added = [...after].filter(([tid]) => !before.has(tid));
    assert.ok(added.length > 0, 'the daemon started threads');
    const want = Math.min(19, main + 10);
    assert.ok(added.some(([, n]) => n === want), `a new thread at nice ${want}: ${JSON.stringify(added)}`);
    // Only the metrics thread (and threads it starts) is lowered: libuv's pool and V8's own stay.
    assert.ok(added.some(([, n]) => n === main) || [...before.values()].every((n) => n === main), 'not every thread was lowered');
  } finally {
    await proxy.close();
    await upstream.close();
  }
});
