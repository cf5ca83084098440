/**
 * src/lib/until-ready.ts: what arrives before the consumer waits, in order and bounded, and goes
 * to it first once it is ready; a consumer that never comes drops everything; a load that fails
 * says so once and drops what waited.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { UntilReady, loadThenFeed } from '../../../src/lib/until-ready.js';

test('items wait in order up to the bound, then go first; later ones go straight through; ready is once only', () => {
  const b = new UntilReady<number>(3);
  assert.equal(b.waiting, true);
  for (const n of [1, 2, 3, 4, 5]) b.push(n);
  const got: number[] = [];
  b.ready((n) => got.push(n));
  assert.equal(b.waiting, false);
  b.push(6);
  assert.deepEqual(got, [1, 2, 3, 6], 'the fourth and fifth did not fit while waiting');
  const other: number[] = [];
  b.ready((n) => other.push(n));
  b.push(7);
  assert.deepEqual([got.at(-1), other], [7, []], 'a second ready changes nothing');
});

test('given up: what waited and what comes later is dropped, and a late ready feeds nothing', () => {
  const b = new UntilReady<string>();
  b.push('a');
  b.giveUp();
  assert.equal(b.waiting, false);
  b.push('b');
  const got: string[] = [];
  b.ready((s) => got.push(s));
  b.push('c');
  assert.deepEqual(got, []);
});

test('loadThenFeed: the loaded consumer gets what waited; a failed load is told once and drops it', async () => {
  const ok = new UntilReady<number>();
  ok.push(1);
  const sink: number[] = [];
  const loading = loadThenFeed(ok, async () => sink, (s) => (n) => s.push(n * 10), () => assert.fail('no error'));
  ok.push(2);
  assert.deepEqual(sink, [], 'nothing reaches it before it is loaded');
  assert.equal(await loading, sink);
  ok.push(3);
  assert.deepEqual(sink, [10, 20, 30]);

  const bad = new UntilReady<number>();
  bad.push(1);
  const errors: string[] = [];
  assert.equal(await loadThenFeed(bad, () => Promise.reject(new Error('no SDK')), () => () => assert.fail('never fed'), (e) => errors.push(e.message)), null);
  bad.push(2);
  assert.deepEqual(errors, ['no SDK']);
  assert.equal(bad.waiting, false);
});
