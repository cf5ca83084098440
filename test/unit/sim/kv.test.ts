/** KV blocks: allocation bounded by capacity, prefix matches, LRU eviction of unheld cached blocks. */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { BlockPool } from '../../../src/sim/kv.js';

it('allocates within capacity and frees on release', () => {
  const pool = new BlockPool(10, true);
  assert.ok(pool.allocate(6));
  assert.equal(pool.allocate(5), false);
  assert.ok(pool.allocate(4));
  pool.release(10, []);
  assert.equal(pool.usedBlocks, 0);
});

it('a released cached prefix is matched and shared, until its space is needed', () => {
  const pool = new BlockPool(10, true);
  pool.allocate(4);
  for (const h of [1, 2, 3]) assert.ok(pool.register(h));
  pool.release(1, [1, 2, 3]); // request done: blocks stay cached but unheld
  assert.equal(pool.usedBlocks, 0);
  assert.equal(pool.match([1, 2, 3, 4], 10), 3);
  assert.equal(pool.match([1, 2, 3], 2), 2);
  assert.equal(pool.match([9, 2], 10), 0);
  pool.acquire([1, 2], 2);
  assert.equal(pool.usedBlocks, 2);
  assert.ok(pool.allocate(8)); // needs block 3's space: evicted
  assert.equal(pool.match([1, 2, 3], 10), 2);
  assert.equal(pool.allocate(1), false);
});

it('with caching off nothing is ever matched', () => {
  const pool = new BlockPool(10, false);
  pool.allocate(2);
  assert.equal(pool.register(1), false);
  assert.equal(pool.match([1], 10), 0);
});
