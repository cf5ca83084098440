import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { GgmlType, GgufType, encodeGguf, type GgufKv } from '../../../src/lib/gguf.js';
import { kvValue, readGguf } from '../../../src/lib/gguf-read.js';
import { buildTinyLlama, fromHalf, mulberry32, toHalf } from '../../../src/lib/gguf-llama.js';

// A made-up SPM-like vocab: unknown, two control tokens, a byte token, then normal pieces.
const TYPES = [2, 3, 3, 6, 1, 1, 1, 1, 1, 1];
const VOCAB: GgufKv[] = [
  { key: 'general.architecture', type: GgufType.STRING, value: 'llama' },
  { key: 'llama.embedding_length', type: GgufType.UINT32, value: 4096 },
  { key: 'tokenizer.ggml.model', type: GgufType.STRING, value: 'llama' },
  { key: 'tokenizer.ggml.tokens', type: GgufType.ARRAY, value: { itemType: GgufType.STRING, items: ['<unk>', '<s>', '</s>', '<0x00>', '▁a', '▁b', 'c', 'd', '▁e', 'f'] } },
  { key: 'tokenizer.ggml.scores', type: GgufType.ARRAY, value: { itemType: GgufType.FLOAT32, items: TYPES.map(() => 0) } },
  { key: 'tokenizer.ggml.token_type', type: GgufType.ARRAY, value: { itemType: GgufType.INT32, items: TYPES } },
  { key: 'tokenizer.ggml.eos_token_id', type: GgufType.UINT32, value: 2 },
];
const small = { nEmbd: 16, nLayer: 2, nHead: 4, nHeadKv: 2, nFf: 32, contextLength: 256 };
const sha = (b: Buffer[]) => createHash('sha256').update(Buffer.concat(b)).digest('hex');

test('binary16 conversion: exact values, rounding to nearest even, subnormals, overflow', () => {
  const cases: [number, number][] = [
    [0, 0x0000], [-0, 0x8000], [1, 0x3c00], [-2, 0xc000], [0.5, 0x3800], [65504, 0x7bff], [65520, 0x7c00],
    [1e9, 0x7c00], [Infinity, 0x7c00], [2 ** -24, 0x0001], [2 ** -14, 0x0400], [1e-9, 0x0000],
    [1 + 2 ** -11, 0x3c00], // halfway between 1 and the next half: ties to even (down)
    [1 + 3 * 2 ** -11, 0x3c02], // halfway, odd below: ties to even (up)
    [0.1, 0x2e66],
  ];
  for (const [v, h] of cases) assert.equal(toHalf(v), h, `toHalf(${v})`);
  assert.ok(Number.isNaN(fromHalf(toHalf(NaN))));
  const rand = mulberry32(1);
  for (let i = 0; i < 1000; i++) {
    const v = (rand() * 2 - 1) * 4;
    assert.ok(Math.abs(fromHalf(toHalf(v)) - v) <= Math.abs(v) * 2 ** -11 + 2 ** -25, `round trip ${v}`);
  }
});

test('llama hyperparameters, tokenizer copied, tensor names and ggml shapes', () => {
  const model = buildTinyLlama(VOCAB, small);
  const parsed = readGguf(Buffer.concat(encodeGguf(model)));
  const kv = (k: string) => kvValue(parsed.kvs, k);
  assert.equal(kv('general.architecture'), 'llama');
  assert.equal(kv('llama.embedding_length'), 16, 'ours, not the vocab file\'s');
  assert.equal(kv('llama.block_count'), 2);
  assert.equal(kv('llama.attention.head_count'), 4);
  assert.equal(kv('llama.attention.head_count_kv'), 2);
  assert.equal(kv('llama.rope.dimension_count'), 4);
  assert.equal(kv('llama.context_length'), 256);
  assert.equal(kv('llama.vocab_size'), 10);
  for (const k of VOCAB.filter((v) => v.key.startsWith('tokenizer.'))) assert.deepEqual(kv(k.key), k.value, k.key);
  assert.equal(parsed.kvs.filter((k) => k.key === 'general.architecture').length, 1);

  const shapes = Object.fromEntries(parsed.tensors.map((t) => [t.name, [t.dims, t.type]]));
  const F16 = GgmlType.F16;
  const F32 = GgmlType.F32;
  assert.deepEqual(shapes['token_embd.weight'], [[16, 10], F16]);
  assert.deepEqual(shapes['output.weight'], [[16, 10], F16]);
  assert.deepEqual(shapes['output_norm.weight'], [[16], F32]);
  for (const l of [0, 1]) {
    assert.deepEqual(shapes[`blk.${l}.attn_norm.weight`], [[16], F32]);
    assert.deepEqual(shapes[`blk.${l}.attn_q.weight`], [[16, 16], F16]);
    assert.deepEqual(shapes[`blk.${l}.attn_k.weight`], [[16, 8], F16]);
    assert.deepEqual(shapes[`blk.${l}.attn_v.weight`], [[16, 8], F16]);
    assert.deepEqual(shapes[`blk.${l}.attn_output.weight`], [[16, 16], F16]);
    assert.deepEqual(shapes[`blk.${l}.ffn_norm.weight`], [[16], F32]);
    assert.deepEqual(shapes[`blk.${l}.ffn_gate.weight`], [[16, 32], F16]);
    assert.deepEqual(shapes[`blk.${l}.ffn_up.weight`], [[16, 32], F16]);
    assert.deepEqual(shapes[`blk.${l}.ffn_down.weight`], [[32, 16], F16]);
  }
  assert.equal(parsed.tensors.length, 3 + 2 * 9);
});

test('output rows of non-text tokens are zero (no EOS, no byte fallback), text rows are not', () => {
  const model = buildTinyLlama(VOCAB, { ...small, weightType: GgmlType.F32 });
  const out = model.tensors.find((t) => t.name === 'output.weight')!;
  const w = new Float32Array(out.data.buffer, out.data.byteOffset, out.data.byteLength / 4);
  TYPES.forEach((type, row) => {
    const r = w.subarray(row * 16, (row + 1) * 16);
    if (type === 1) assert.ok(r.some((x) => x !== 0), `row ${row} is random`);
    else assert.ok(r.every((x) => x === 0), `row ${row} (type ${type}) is zero`);
  });
});

test('deterministic given the seed; another seed gives other weights', () => {
  const a = sha(encodeGguf(buildTinyLlama(VOCAB, { ...small, seed: 7 })));
  assert.equal(sha(encodeGguf(buildTinyLlama(VOCAB, { ...small, seed: 7 }))), a);
  assert.notEqual(sha(encodeGguf(buildTinyLlama(VOCAB, { ...small, seed: 8 }))), a);
});

test('the default model with a 32000-token vocab stays a few tens of MB', () => {
  const tokens = Array.from({ length: 32000 }, (_, i) => `t${i}`);
  const vocab: GgufKv[] = [{ key: 'tokenizer.ggml.tokens', type: GgufType.ARRAY, value: { itemType: GgufType.STRING, items: tokens } }];
  const size = encodeGguf(buildTinyLlama(vocab)).reduce((n, b) => n + b.length, 0);
  assert.ok(size > 16e6 && size < 20e6, `size ${size}`);
});

test('refuses shapes llama cannot run', () => {
  assert.throws(() => buildTinyLlama(VOCAB, { ...small, nHead: 3 }), /divide/);
  assert.throws(() => buildTinyLlama(VOCAB, { ...small, nEmbd: 12, nHead: 4, nHeadKv: 4 }), /even/);
  assert.throws(() => buildTinyLlama([], small), /tokenizer.ggml.tokens/);
});
