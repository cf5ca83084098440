import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { ID_LIMIT, PrefixHasher, blockIds, commonUnit, fullBlockIds, unitChars } from '../../../src/lib/block-hash.js';

const hasher = new PrefixHasher('salt-a');
const range = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i);

/** The id as docs/workload-trace.md defines it, computed here from the definition alone. */
function specId(cut: string, salt: string, prefix: Buffer): number {
  const d = createHash('sha256').update(Buffer.concat([Buffer.from(`infermeter-prefix-v1\0${cut}\0${salt}\0`), prefix])).digest();
  return Number(BigInt('0x' + d.subarray(0, 8).toString('hex')) >> 11n);
}
const le32 = (ids: number[]) => Buffer.concat(ids.map((v) => { const b = Buffer.alloc(4); b.writeUInt32LE(v); return b; }));

test('an id is the first 53 bits of SHA-256 over the version, the cut, the salt and the prefix (the documented definition)', () => {
  const ids = range(100, 40);
  const b = hasher.tokens(ids, 16);
  assert.deepEqual(b.chain, [specId('tokens', 'salt-a', le32(ids.slice(0, 16))), specId('tokens', 'salt-a', le32(ids.slice(0, 32)))]);
  assert.equal(b.whole, specId('tokens', 'salt-a', le32(ids)));
  const text = 'x'.repeat(150);
  const c = hasher.chars(text, 16, 4);
  assert.deepEqual(c.chain, [specId('chars', 'salt-a', Buffer.from(text.slice(0, 64))), specId('chars', 'salt-a', Buffer.from(text.slice(0, 128)))]);
  assert.equal(c.whole, specId('chars', 'salt-a', Buffer.from(text)));
  for (const id of [...b.chain, b.whole, ...c.chain]) assert.ok(Number.isSafeInteger(id) && id >= 0 && id < ID_LIMIT);
});

test('prompts share their first k ids exactly when they share their first k blocks', () => {
  const shared = range(1, 48);
  const a = hasher.tokens([...shared, ...range(1000, 30)], 16);
  const b = hasher.tokens([...shared, ...range(2000, 30)], 16);
  assert.deepEqual(a.chain.slice(0, 3), b.chain.slice(0, 3));
  assert.notEqual(a.chain[3], b.chain[3]);
  // One token different in the first block: nothing shared, even where later tokens agree.
  const c = hasher.tokens([999, ...shared.slice(1), ...range(1000, 30)], 16);
  assert.equal(c.chain.filter((id) => a.chain.includes(id)).length, 0);
});

test('the salt changes every id; the cut keeps tokens and characters apart', () => {
  const other = new PrefixHasher('salt-b');
  const ids = range(0, 64);
  assert.equal(hasher.tokens(ids, 16).chain.filter((id) => other.tokens(ids, 16).chain.includes(id)).length, 0);
  assert.throws(() => new PrefixHasher(''), /salt is empty/);
});

test('one chain at the common unit gives every multiple: coarse ids are the fine chain at coarse boundaries', () => {
  const ids = range(7, 1100);
  const fine = hasher.tokens(ids, 16);
  const coarse = hasher.tokens(ids, 512);
  assert.deepEqual(fullBlockIds(fine, 512), coarse.chain);
  assert.deepEqual(fullBlockIds(fine, 16), fine.chain);
  assert.equal(fine.whole, coarse.whole);
  assert.equal(commonUnit([512, 16]), 16);
  assert.equal(commonUnit([512, 48]), 16);
  assert.throws(() => fullBlockIds(fine, 24), /not a multiple/);
});

test('Mooncake ids: ceil(input_length / block) of them, the last naming the whole prompt when a block is partial', () => {
  const ids = range(7, 1100);
  const b = hasher.tokens(ids, 16);
  const m = blockIds(b, 512);
  assert.equal(m.length, 3);
  assert.deepEqual(m.slice(0, 2), fullBlockIds(b, 512));
  assert.equal(m[2], b.whole);
  // On a block boundary there is no partial block: 1024 tokens, two ids.
  assert.deepEqual(blockIds(hasher.tokens(ids.slice(0, 1024), 16), 512), fullBlockIds(b, 512));
  // Ending on a unit boundary inside a block: the whole prompt's id is its own, not a block's.
  const onUnit = hasher.tokens(ids.slice(0, 528), 16);
  assert.deepEqual(blockIds(onUnit, 512), [fullBlockIds(b, 512)[0], onUnit.whole]);
  assert.deepEqual(blockIds(hasher.tokens([], 16), 512), []);
});

test('the engine counted more blocks: padding ids unique to the prompt; fewer: the list is cut short', () => {
  const b = hasher.tokens(range(7, 600), 16);
  const more = blockIds(b, 512, 1600);
  assert.equal(more.length, 4);
  assert.deepEqual(more.slice(0, 2), blockIds(b, 512));
  assert.equal(new Set(more).size, 4);
  const other = hasher.tokens(range(8, 600), 16);
  assert.notDeepEqual(blockIds(other, 512, 1600).slice(2), more.slice(2));
  assert.deepEqual(blockIds(b, 512, 500), blockIds(b, 512).slice(0, 1));
  assert.deepEqual(blockIds(b, 512, 0), []);
});

test('chars: blocks of unit × chars_per_token characters; a shared text prefix gives shared ids', () => {
  assert.equal(unitChars(16, 4), 64);
  assert.equal(unitChars(16, 3.5), 56);
  const system = 'You are a helpful assistant. '.repeat(100);
  const a = hasher.chars(system + 'first question '.repeat(20), 16, 4);
  const b = hasher.chars(system + 'another, longer question entirely '.repeat(20), 16, 4);
  const sharedBlocks = Math.floor(system.length / 64);
  assert.deepEqual(a.chain.slice(0, sharedBlocks), b.chain.slice(0, sharedBlocks));
  assert.ok(a.chain.length > sharedBlocks && b.chain.length > sharedBlocks);
  assert.equal(a.chain.slice(sharedBlocks).filter((id) => b.chain.includes(id)).length, 0);
  assert.equal(a.tokens, Math.ceil((system.length + 15 * 20) / 4));
  assert.equal(blockIds(a, 512).length, Math.ceil(a.tokens / 512));
});
