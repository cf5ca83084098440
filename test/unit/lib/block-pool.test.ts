/** KV blocks: allocation bounded by capacity, prefix matches, LRU eviction of unheld cached blocks. */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { BlockPool } from '../../../src/lib/block-pool.js';

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

it('a released prompt is evicted tail first, as vLLM frees it', () => {
  const pool = new BlockPool<string>(4, true);
  pool.allocate(3);
  for (const h of ['a', 'ab', 'abc']) pool.register(h);
  pool.release(0, ['a', 'ab', 'abc']);
  pool.allocate(2); // one free block, then one evicted: the tail
  assert.deepEqual([pool.match(['a', 'ab', 'abc'], 3), pool.cachedBlocks], [2, 2]);
  pool.allocate(1); // the next one
  assert.equal(pool.match(['a', 'ab', 'abc'], 3), 1);
});

it('blocks held by a running request are never evicted; a request that finds it cached is served first', () => {
  const pool = new BlockPool<number>(3, true);
  pool.allocate(2);
  pool.register(1);
  pool.register(2);
  pool.release(0, [1, 2]); // cached, evictable: 2 then 1 in the queue
  pool.acquire([1, 2], pool.match([1, 2], 2)); // held again: out of the queue
  assert.equal(pool.allocate(2), false, 'only one block is not held');
  assert.ok(pool.allocate(1));
  assert.equal(pool.match([1, 2], 2), 2);
});
