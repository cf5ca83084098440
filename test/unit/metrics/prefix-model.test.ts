/**
 * The prefix-cache model against hand-computed sequences (docs/prefix-cache.md): chained ids
 * hit only as a leading run, a cache of the engine's size evicts the least recently used
 * block (a released prompt's tail first), blocks held by running requests are never evicted,
 * and the unbounded set stays within its cap by sampling, its estimate unbiased on chained ids.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SizedPrefixCache, UnboundedPrefixSet, spreadOf } from '../../../src/metrics/prefix/model.js';
import { engineSizeCache, traceStats, unboundedCache } from '../../../src/bench/replay/stats.js';
import { buildWorkload } from '../../../src/bench/replay/workload.js';
import { parseTrace } from '../../../src/bench/replay/trace.js';

/** Chained ids as the hasher makes them: id k names the prefix through block k ("s1" then "s1/q"...). */
const chain = (...parts: string[]) => parts.map((_, i) => parts.slice(0, i + 1).join('/'));
const spreads = (keys: readonly string[]) => keys.map((k) => spreadOf([...k].reduce((h, c) => (h * 31 + c.charCodeAt(0)) % 2 ** 48, 7)));
const ones = (n: number) => Array.from({ length: n }, () => 16);

test('unbounded: a hit is the leading run of blocks seen before; a block after a miss does not count', () => {
  const u = new UnboundedPrefixSet<string>();
  const admit = (keys: string[]) => u.admit(keys, spreads(keys), ones(keys.length));
  assert.equal(admit(chain('sys', 'q1')), 0);
  assert.equal(admit(chain('sys', 'q2')), 16, 'the system prompt');
  assert.equal(admit(chain('sys', 'q1', 'more')), 32);
  assert.equal(admit(['other', 'sys']), 0, 'a seen block after a miss is no hit');
  assert.deepEqual([u.rate, u.size], [1, 5]);
});

test('sized: least recently used out, a released prompt\'s tail first (hand-computed, 4 blocks)', () => {
  const c = new SizedPrefixCache<string>(4);
  const run = (keys: string[], context = keys.length) => {
    const { hit, holding } = c.begin(keys, keys.length, context);
    c.end(holding);
    return hit;
  };
  assert.equal(run(chain('a', 'b')), 0); // cached a, a/b; queue (first out first): a/b, a
  assert.equal(run(chain('x', 'y', 'z')), 0); // 2 free + 1 evicted: a/b (the tail) goes, a stays
  assert.equal(c.cachedBlocks, 4);
  // Queue: a, then x/y/z's release tail first: x/y/z, x/y, x. Taking a back, a/b needs a block: x/y/z goes.
  assert.equal(run(chain('a', 'b')), 1, 'a survived, a/b did not');
  assert.equal(run(chain('q')), 0); // queue x/y, x, a/b, a: x/y goes
  assert.equal(run(chain('x', 'y', 'z')), 1, 'x still cached; its tail went first');
  assert.equal(c.overflows, 0);
});

test('sized: blocks held by a running request are never evicted; a request that finds no room is modelled with what is free', () => {
  const c = new SizedPrefixCache<string>(4);
  const long = c.begin(chain('p', 'q'), 2, 3); // runs: holds p, p/q and one output block
  assert.equal(c.heldBlocks, 3);
  const other = c.begin(chain('u', 'v'), 2, 2); // one block free: an overflow, u cached, v not
  assert.equal(c.overflows, 1);
  assert.equal(c.heldBlocks, 4);
  c.end(other.holding);
  const again = c.begin(chain('p', 'q'), 2, 2);
  assert.equal(again.hit, 2, 'the running request\'s blocks stayed');
  c.end(again.holding);
  c.end(long.holding);
  assert.equal(c.heldBlocks, 0);
  // A whole-prompt hit is capped by the limit (vLLM computes the last prompt token again).
  const capped = c.begin(chain('p', 'q'), 1, 2);
  assert.equal(capped.hit, 1);
  c.end(capped.holding);
});

test('unbounded under its cap samples: the set stays within the cap and the estimate stays near the exact figure', () => {
  // 4,000 prompts: 400 shared system prompts of 8 blocks, each followed by 4 blocks of its own (19,200 distinct blocks).
  const prompts: string[][] = [];
  for (let i = 0; i < 4000; i++) prompts.push(chain(`sys${i % 400}`, ...Array.from({ length: 7 }, (_, k) => `s${k}`), `u${i}`, 'a', 'b', 'c'));
  const exact = new UnboundedPrefixSet<string>(1 << 20);
  const small = new UnboundedPrefixSet<string>(4000);
  let e = 0;
  let s = 0;
  for (const keys of prompts) {
    const sp = spreads(keys);
    e += exact.admit(keys, sp, ones(keys.length));
    s += small.admit(keys, sp, ones(keys.length));
    assert.ok(small.size <= 4000);
  }
  assert.equal(e, (4000 - 400) * 8 * 16, 'exact: every prompt after the first of its system prompt hits its 8 blocks');
  assert.ok(small.rate < 1 && small.rate >= 1 / 16, `rate ${small.rate}`);
  assert.ok(Math.abs(s / e - 1) < 0.1, `sampled estimate ${s} against exact ${e} (rate ${small.rate})`);
});

test('spreadOf: in [0, 1), near uniform over consecutive ids, different per namespace', () => {
  const xs = Array.from({ length: 10_000 }, (_, i) => spreadOf(i));
  assert.ok(xs.every((x) => x >= 0 && x < 1));
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  assert.ok(Math.abs(mean - 0.5) < 0.02, `mean ${mean}`);
  assert.ok(xs.filter((x) => x < 0.1).length > 900 && xs.filter((x) => x < 0.1).length < 1100);
  assert.notEqual(spreadOf(5, 0), spreadOf(5, 1));
  assert.equal(spreadOf(2 ** 52 + 3), spreadOf(2 ** 52 + 3));
});

test('trace stats with a cache of the engine\'s size: each request holds its blocks until its recorded end', () => {
  // Block size 10; a cache of 40 blocks of 16 tokens = 64 of the trace's blocks... made small: 4 blocks of 10.
  const lines = [
    '{"timestamp":0,"input_length":20,"output_length":10,"hash_ids":[1,2],"e2e_ms":5000}', // holds 3 blocks until 5 s
    '{"timestamp":1000,"input_length":20,"output_length":0,"hash_ids":[3,4],"e2e_ms":10}', // 1 free block: overflow, 3 cached
    '{"timestamp":2000,"input_length":20,"output_length":0,"hash_ids":[1,2],"e2e_ms":10}', // 1 and 2 held by the first: a hit of 20
    '{"timestamp":6000,"input_length":30,"output_length":0,"hash_ids":[5,6,7],"e2e_ms":10}', // first ended: evicts LRU
    '{"timestamp":7000,"input_length":20,"output_length":0,"hash_ids":[3,4]}', // 3 was evicted first (oldest)
  ];
  const f = parseTrace(lines.join('\n') + '\n', 't.jsonl', { path: 't.jsonl.meta.json', doc: { block_size: 10 } });
  const s = traceStats(buildWorkload([f], 1, new Map()), { models: [unboundedCache(), engineSizeCache({ blocks: 4, blockTokens: 10, traceBlockTokens: 10 })] });
  const [u, sized] = s.reuse;
  assert.deepEqual([u!.hitTokens, u!.requestsHit, u!.rate], [40, 2, 1], 'unbounded: requests 3 and 5');
  assert.equal(sized!.model, 'engine size');
  assert.deepEqual([sized!.hitTokens, sized!.requestsHit], [20, 1], 'sized: request 3 only');
  assert.equal(sized!.promptTokens, 110);
  assert.throws(() => engineSizeCache({ blocks: 1, blockTokens: 16, traceBlockTokens: 512 }), /less than one of the trace's 512-token blocks/);
});
