import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { ProxyHealth } from '../../../src/side/health.js';
import { createLogger, setLogLevel } from '../../../src/lib/log.js';

function clocked(opts: { requiresUpstream?: boolean } = {}) {
  let now = 1000;
  const h = new ProxyHealth({ livenessTimeoutMs: 10_000, requiresUpstream: opts.requiresUpstream ?? false }, () => now);
  return { h, advance: (ms: number) => (now += ms) };
}

test('readiness: not before a loop listens, yes while one does, no from the first draining on', () => {
  const { h } = clocked();
  assert.deepEqual(h.readiness().ok, false);
  assert.match(h.readiness().reason, /^starting/);
  h.beat(1); // a worker that beats but does not listen yet
  assert.equal(h.readiness().ok, false);
  h.state(1, 'listening');
  assert.equal(h.readiness().ok, true);
  h.state(2, 'listening');
  assert.match(h.readiness().reason, /2 proxy loop\(s\) listening/);
  h.exited(1);
  assert.equal(h.readiness().ok, true, 'one worker gone, the other still serves');
  h.state(0, 'draining');
  assert.equal(h.readiness().ok, false);
  assert.match(h.readiness().reason, /^draining/);
  assert.equal(h.liveness().ok, true, 'draining is alive');
});

test('liveness: a loop silent past the timeout fails it, naming the loop; a beat or its exit clears it', () => {
  const { h, advance } = clocked();
  h.state(3, 'listening');
  h.state(4, 'listening');
  advance(9_000);
  h.beat(3);
  assert.equal(h.liveness().ok, true);
  advance(1_500);
  const a = h.liveness();
  assert.equal(a.ok, false);
  assert.match(a.reason, /^proxy loop 4 has sent no heartbeat for 10\.5 s/);
  assert.equal(h.readiness().ok, false, 'a wedged loop is not ready either');
  h.beat(4);
  assert.equal(h.liveness().ok, true);
  advance(20_000);
  h.exited(3);
  h.exited(4);
  assert.equal(h.liveness().ok, true, 'a dead worker is the primary\'s to replace, not a liveness failure');
});

// README: "/readyz also requires that the upstream answered within the last 15 s".
test('--ready-requires-upstream: ready only within 15 s (README) of an upstream answer', () => {
  const { h, advance } = clocked({ requiresUpstream: true });
  h.state(0, 'listening');
  assert.match(h.readiness().reason, /^upstream/);
  h.upstreamAnswered();
  assert.equal(h.readiness().ok, true);
  advance(15_000);
  h.beat(0);
  assert.equal(h.readiness().ok, true, 'exactly 15 s after the answer: still fresh');
  advance(1);
  h.beat(0);
  assert.equal(h.readiness().ok, false);
  assert.match(h.readiness().reason, /in the last 15 s/);
});

test('setLogLevel reaches every logger of the family, children made before and after', () => {
  const lines: string[] = [];
  const out = new Writable({ write: (c: Buffer, _e, cb) => (lines.push(c.toString()), cb()) });
  const root = createLogger('info', 'infermeter', out);
  const child = root.child({ thread: 'metrics' });
  const grandchild = child.child({ collector: 'gpu' });
  grandchild.debug('hidden');
  setLogLevel(child, 'debug');
  grandchild.debug('shown');
  root.child({ later: true }).debug('also shown');
  setLogLevel(root, 'warn');
  grandchild.info('hidden again');
  assert.deepEqual(lines.map((l) => (JSON.parse(l) as { msg: string }).msg), ['shown', 'also shown']);
});
