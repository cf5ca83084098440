/**
 * Replayed prompts (src/bench/replay/prompts.ts), the token calibration's fit
 * (calibrate.ts) and trace stats (stats.ts): the same hash id gives the same text, shared
 * leading ids give byte-identical prefixes and nothing more, lengths follow the scale, and
 * prefix reuse is counted as a prefix cache counts it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WORDS, blockText, replayPrompt, wordText } from '../../../src/bench/replay/prompts.js';
import { fit, scaleFor } from '../../../src/bench/replay/calibrate.js';
import { niceBucket, traceStats, unboundedCache, type ReuseModel } from '../../../src/bench/replay/stats.js';
import { renderTraceStats } from '../../../src/bench/replay/stats-render.js';
import { parseTrace } from '../../../src/bench/replay/trace.js';
import { buildWorkload } from '../../../src/bench/replay/workload.js';
import { estimateTokens } from '../../../src/sim/text.js';

const req = (line: number, inputLength: number, hashIds: number[], blockSize = 16, file = 0) => ({ file, namespace: file, blockSize, record: { line, inputLength, hashIds } });
const scale = { tokensPerWord: 1, overhead: 0 };
/** Characters of a block of 16 one-token words. */
const BLOCK = 16 * 4;

/** Length of the common prefix of two strings. */
function common(a: string, b: string): number {
  let n = 0;
  while (n < a.length && n < b.length && a[n] === b[n]) n++;
  return n;
}

test('word text: one-token words of four characters, as many as asked, the same for the same seed', () => {
  assert.ok(WORDS.length >= 100 && WORDS.every((w) => /^ [a-z]{3}$/.test(w)));
  for (const words of [0, 1, 7, 512]) {
    const t = wordText(42, words);
    assert.equal(t.length, 4 * words);
    assert.equal(t, wordText(42, words));
    assert.equal(estimateTokens(t || 'x'), Math.max(1, words), 'the simulator counts a token per word');
  }
  assert.notEqual(wordText(1, 50), wordText(2, 50));
});

test('shared leading hash ids give byte-identical prefixes, exactly as long as the shared blocks', () => {
  const a = replayPrompt(req(1, 64, [1, 2, 3, 4]), scale);
  const b = replayPrompt(req(2, 64, [1, 2, 7, 8]), scale);
  const c = replayPrompt(req(3, 64, [9, 2, 3, 4]), scale);
  assert.equal(a.slice(0, 2 * BLOCK), b.slice(0, 2 * BLOCK), 'two shared blocks: the first 32 words match byte for byte');
  assert.ok(common(a, b) < 2 * BLOCK + 12, `they part at the third block (common prefix ${common(a, b)} chars)`);
  assert.ok(common(a, c) < 12, 'a different first id shares (almost) nothing, even with later ids equal');
  assert.equal(replayPrompt(req(1, 64, [1, 2, 3, 4]), scale), a, 'the same line gives the same prompt on every run');
  assert.equal(a.slice(BLOCK, 2 * BLOCK), blockText('replay', 0, 2, 16));
  assert.ok(common(replayPrompt(req(1, 64, [1, 2, 3, 4], 16, 1), scale), a) < 12, 'another file: another namespace, other blocks');
  assert.ok(common(replayPrompt(req(1, 64, [1, 2, 3, 4]), scale, 'warmup 0'), a) < 12, 'warm-up text caches nothing the replay asks');
});

test('lengths: the recorded input length in words of the scale, the template\'s tokens left out; the three block layouts', () => {
  // Full blocks, then a remainder of its own: no other request has it.
  const full = replayPrompt(req(1, 40, [1, 2]), scale);
  assert.equal(full.length, 160);
  assert.equal(estimateTokens(full), 40, 'the simulator counts the recorded input length');
  const other = replayPrompt(req(2, 40, [1, 2]), scale);
  assert.ok(common(full, other) >= 2 * BLOCK && common(full, other) < 2 * BLOCK + 12, 'same ids, different remainders');
  // Mooncake's own layout: the last id a partial block (the start of that id's full block).
  const partial = replayPrompt(req(3, 20, [1, 5]), scale);
  assert.equal(partial.length, 80);
  assert.equal(partial.slice(BLOCK), blockText('replay', 0, 5, 16).slice(0, 16));
  // Ids for a prefix only.
  assert.equal(replayPrompt(req(4, 100, [1]), scale).length, 400);
  // The template's 6 tokens: 6 fewer words; when they eat into the blocks the last are cut, the first still shared.
  const templated = replayPrompt(req(5, 32, [1, 2]), { tokensPerWord: 1, overhead: 6 });
  assert.equal(templated.length, (32 - 6) * 4);
  assert.equal(templated.slice(0, BLOCK), full.slice(0, BLOCK));
  // A tokenizer that splits some words (1.25 tokens per word): blocks of 13 words.
  const split = replayPrompt(req(6, 48, [1, 2, 3]), { tokensPerWord: 1.25, overhead: 0 });
  assert.equal(split.length, Math.round(48 / 1.25) * 4);
  assert.equal(split.slice(0, 13 * 4), blockText('replay', 0, 1, 13));
});

test('calibration: a line through two probes gives tokens per word and the template; without counts, the estimate', () => {
  const sim = fit([{ words: 32, promptTokens: Math.ceil((32 * 4 + 23) / 4), error: null }, { words: 1024, promptTokens: Math.ceil((1024 * 4 + 23) / 4), error: null }]);
  assert.deepEqual(sim, { tokensPerWord: 1, overhead: 6, fallback: null });
  const spm = fit([{ words: 32, promptTokens: 32 + 29, error: null }, { words: 1024, promptTokens: 1024 + 29, error: null }]);
  assert.deepEqual(spm, { tokensPerWord: 1, overhead: 29, fallback: null });
  const splits = fit([{ words: 32, promptTokens: 40 + 10, error: null }, { words: 1024, promptTokens: 1280 + 10, error: null }]);
  assert.deepEqual(splits, { tokensPerWord: 1.25, overhead: 10, fallback: null });
  assert.match(fit([{ words: 32, promptTokens: null, error: 'http 400' }, { words: 1024, promptTokens: 900, error: null }]).fallback!, /no prompt token count from the target \(http 400\): a token per word assumed/);
  assert.match(fit([{ words: 32, promptTokens: 50, error: null }, { words: 1024, promptTokens: 50, error: null }]).fallback!, /counted 50 and 50 tokens/);
  const cal = [{ api: 'chat' as const, model: null, tokensPerWord: 1.1, overhead: 7, probes: [], fallback: null }];
  assert.equal(scaleFor(cal, 'chat', null).tokensPerWord, 1.1);
  assert.equal(scaleFor(cal, 'completions', null).tokensPerWord, 1, 'an uncalibrated pair keeps the estimate');
});

test('trace stats: unbounded prefix reuse counts each request\'s leading run of blocks already seen', () => {
  const f = parseTrace([
    '{"timestamp":0,"input_length":25,"output_length":5,"hash_ids":[1,2],"api":"chat","model":"m"}', // 25 tokens, nothing seen
    '{"timestamp":1000,"input_length":30,"output_length":7,"hash_ids":[1,2,3],"api":"completions","model":"m"}', // 20 hit
    '{"timestamp":2000,"input_length":30,"output_length":9,"hash_ids":[4,2,3]}', // 4 unseen: no hit, though 2 and 3 were seen
    '{"timestamp":2500,"input_length":14,"output_length":1,"hash_ids":[1,9]}', // 10 hit, then a miss
  ].join('\n'), 't.jsonl', { path: 't.jsonl.meta.json', doc: { block_size: 10 } });
  const s = traceStats(buildWorkload([f], 1, new Map()));
  assert.equal(s.requests, 4);
  assert.equal(s.spanSeconds, 2.5);
  assert.equal(s.arrivalRate, 3 / 2.5);
  const u = s.reuse[0]!;
  assert.deepEqual([u.model, u.hitTokens, u.promptTokens, u.requestsHit], ['unbounded', 30, 99, 2]);
  assert.equal(u.share, 30 / 99);
  assert.deepEqual(s.api, { 'chat (not recorded)': 2, chat: 1, completions: 1 });
  assert.deepEqual(s.inputTokens.max, 30);
  assert.equal(s.rate.reduce((a, b) => a + b.requests, 0), 4);
  assert.deepEqual(s.lengthHistogram, [{ upTo: 16, input: 1, output: 4 }, { upTo: 32, input: 3, output: 0 }]);
  assert.deepEqual(s.rate.map((b) => b.requests), [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 1], 'buckets of 0.2 s: 1.0 s falls in the sixth, as decimal arithmetic says');
  assert.match(renderTraceStats(s), /\| unbounded: every block ever seen stays cached: the most any prefix cache could reuse \| 30 of 99 \| 30\.3% \| 2 \|/);
});

test('trace stats take any cache model in the list (the seam for a finite cache)', () => {
  const f = parseTrace('{"timestamp":0,"input_length":20,"output_length":1,"hash_ids":[1,2]}\n{"timestamp":5,"input_length":20,"output_length":1,"hash_ids":[1,2]}\n', 'x.jsonl', { path: 'x.jsonl.meta.json', doc: { block_size: 10 } });
  // A cache of one block: the second request finds block 1 gone (block 2 came after it).
  const one: ReuseModel = (() => {
    let held: string | null = null;
    return { name: 'one block', description: 'test', admit: (blocks) => {
      const hit = blocks.length && blocks[0]!.key === held ? blocks[0]!.tokens : 0;
      held = blocks[blocks.length - 1]?.key ?? held;
      return hit;
    } };
  })();
  const s = traceStats(buildWorkload([f], 1, new Map()), { models: [unboundedCache(), one] });
  assert.deepEqual(s.reuse.map((r) => [r.model, r.hitTokens]), [['unbounded', 20], ['one block', 0]]);
});

test('rate buckets come in 1, 2, 5 steps, about 20 over the trace', () => {
  assert.equal(niceBucket(60), 5);
  assert.equal(niceBucket(3600), 200);
  assert.equal(niceBucket(3), 0.2);
  assert.equal(niceBucket(0), 0.001);
});
