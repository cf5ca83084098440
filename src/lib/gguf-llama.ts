/**
 * A tiny random-weight llama-architecture model, built around the tokenizer of a vocab-only
 * GGUF file (llama.cpp ships those for its tokenizer tests). It generates gibberish, but a
 * real llama-server runs it with real prefill, decode, batching, slots and /metrics, which
 * is all infermeter's real-engine tests need. Deterministic: the same vocab, hyperparameters
 * and seed give the same bytes.
 *
 * Tokens that are not plain text pieces (control, unknown, byte-fallback, unused) get an
 * all-zero output row, so their logit is exactly 0 while some normal token's is almost
 * surely above it: greedy decoding then never ends a stream early with EOS and never emits
 * half a UTF-8 character, so a request generates exactly max_tokens tokens, one per chunk.
 */
import { GgmlType, GgufType, GgufError, type GgufArray, type GgufFile, type GgufKv, type GgufTensor } from './gguf.js';
import { kvValue } from './gguf-read.js';
import { mulberry32 } from './prng.js';

export interface TinyLlamaParams {
  nEmbd: number;
  nLayer: number;
  nHead: number;
  nHeadKv: number;
  nFf: number;
  contextLength: number;
  seed: number;
  /** Type of the 2-D weights; norms are always F32. */
  weightType: GgmlType;
  name: string;
}

export const TINY_LLAMA_DEFAULTS: TinyLlamaParams = {
  nEmbd: 128, nLayer: 2, nHead: 4, nHeadKv: 4, nFf: 256, contextLength: 2048, seed: 42,
  weightType: GgmlType.F16, name: 'infermeter-tiny-llama',
};

const LLAMA_TOKEN_TYPE_NORMAL = 1;

export { mulberry32 };

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** IEEE 754 binary16 bits of `v`, rounded to nearest even (Node 20 has no Float16Array). */
export function toHalf(v: number): number {
  f32[0] = v;
  const x = u32[0]!;
  const sign = (x >>> 16) & 0x8000;
  const exp8 = (x >>> 23) & 0xff;
  let mant = x & 0x7fffff;
  if (exp8 === 0xff) return sign | 0x7c00 | (mant !== 0 ? 0x200 : 0);
  const exp = exp8 - 127 + 15;
  if (exp >= 0x1f) return sign | 0x7c00;
  if (exp <= 0) {
    if (exp < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - exp;
    let half = mant >>> shift;
    const rest = mant & ((1 << shift) - 1);
    const halfway = 1 << (shift - 1);
    if (rest > halfway || (rest === halfway && (half & 1) === 1)) half++;
    return sign | half;
  }
  let half = sign | (exp << 10) | (mant >>> 13);
  const rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && (half & 1) === 1)) half++; // a carry into the exponent is correct rounding
  return half;
}

/** The float value of binary16 bits (for tests and readers). */
export function fromHalf(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >>> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 0x1f) return mant ? NaN : sign * Infinity;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}

function tensor(name: string, dims: number[], type: GgmlType, value: (i: number) => number): GgufTensor {
  const n = dims.reduce((a, b) => a * b, 1);
  if (type === GgmlType.F32) {
    const a = new Float32Array(n);
    for (let i = 0; i < n; i++) a[i] = value(i);
    return { name, dims, type, data: new Uint8Array(a.buffer) };
  }
  const a = new Uint16Array(n);
  for (let i = 0; i < n; i++) a[i] = toHalf(value(i));
  return { name, dims, type, data: new Uint8Array(a.buffer) };
}

/** The tokenizer.* KV pairs of a vocab file and its token types (one per token). */
export function tokenizerOf(vocabKvs: readonly GgufKv[]): { kvs: GgufKv[]; nVocab: number; tokenTypes: number[] | null } {
  const tokens = kvValue(vocabKvs, 'tokenizer.ggml.tokens') as GgufArray | undefined;
  if (!tokens || typeof tokens !== 'object' || tokens.itemType !== GgufType.STRING) {
    throw new GgufError('the vocab file has no tokenizer.ggml.tokens string array');
  }
  const types = kvValue(vocabKvs, 'tokenizer.ggml.token_type') as GgufArray | undefined;
  return {
    kvs: vocabKvs.filter((kv) => kv.key.startsWith('tokenizer.')),
    nVocab: tokens.items.length,
    tokenTypes: types && typeof types === 'object' ? (types.items as number[]) : null,
  };
}

export function buildTinyLlama(vocabKvs: readonly GgufKv[], params: Partial<TinyLlamaParams> = {}): GgufFile {
  const p = { ...TINY_LLAMA_DEFAULTS, ...params };
  if (p.nEmbd % p.nHead !== 0 || p.nHead % p.nHeadKv !== 0) throw new GgufError('nEmbd must divide by nHead, and nHead by nHeadKv');
  const headDim = p.nEmbd / p.nHead;
  if (headDim % 2 !== 0) throw new GgufError('the head dimension must be even (RoPE rotates pairs)');
  const { kvs: tokenizerKvs, nVocab, tokenTypes } = tokenizerOf(vocabKvs);
  const u32kv = (key: string, value: number): GgufKv => ({ key, type: GgufType.UINT32, value });
  const kvs: GgufKv[] = [
    { key: 'general.architecture', type: GgufType.STRING, value: 'llama' },
    { key: 'general.name', type: GgufType.STRING, value: p.name },
    { key: 'general.description', type: GgufType.STRING, value: `random weights (seed ${p.seed}) for infermeter's real-engine tests; generates gibberish` },
    u32kv('general.file_type', p.weightType === GgmlType.F16 ? 1 : 0),
    u32kv('general.alignment', 32),
    u32kv('llama.vocab_size', nVocab),
    u32kv('llama.context_length', p.contextLength),
    u32kv('llama.embedding_length', p.nEmbd),
    u32kv('llama.block_count', p.nLayer),
    u32kv('llama.feed_forward_length', p.nFf),
    u32kv('llama.rope.dimension_count', headDim),
    u32kv('llama.attention.head_count', p.nHead),
    u32kv('llama.attention.head_count_kv', p.nHeadKv),
    { key: 'llama.attention.layer_norm_rms_epsilon', type: GgufType.FLOAT32, value: 1e-5 },
    { key: 'llama.rope.freq_base', type: GgufType.FLOAT32, value: 10000 },
    ...tokenizerKvs,
  ];

  const rand = mulberry32(p.seed);
  // Uniform in ±sqrt(3/fanIn): unit-variance activations stay unit-variance through a layer.
  const dense = (name: string, fanIn: number, fanOut: number) => {
    const a = Math.sqrt(3 / fanIn);
    return tensor(name, [fanIn, fanOut], p.weightType, () => (rand() * 2 - 1) * a);
  };
  const ones = (name: string) => tensor(name, [p.nEmbd], GgmlType.F32, () => 1);
  const kvDim = headDim * p.nHeadKv;
  const silent = tokenTypes ? (row: number) => tokenTypes[row] !== LLAMA_TOKEN_TYPE_NORMAL : () => false;
  const outScale = Math.sqrt(3 / p.nEmbd);

  const tensors: GgufTensor[] = [
    tensor('token_embd.weight', [p.nEmbd, nVocab], p.weightType, () => rand() * 2 - 1),
    ones('output_norm.weight'),
    tensor('output.weight', [p.nEmbd, nVocab], p.weightType, (i) => {
      const r = (rand() * 2 - 1) * outScale; // drawn for every element so rows stay seed-stable
      return silent(Math.floor(i / p.nEmbd)) ? 0 : r;
    }),
  ];
  for (let l = 0; l < p.nLayer; l++) {
    tensors.push(
      ones(`blk.${l}.attn_norm.weight`),
      dense(`blk.${l}.attn_q.weight`, p.nEmbd, p.nEmbd),
      dense(`blk.${l}.attn_k.weight`, p.nEmbd, kvDim),
      dense(`blk.${l}.attn_v.weight`, p.nEmbd, kvDim),
      dense(`blk.${l}.attn_output.weight`, p.nEmbd, p.nEmbd),
      ones(`blk.${l}.ffn_norm.weight`),
      dense(`blk.${l}.ffn_gate.weight`, p.nEmbd, p.nFf),
      dense(`blk.${l}.ffn_up.weight`, p.nEmbd, p.nFf),
      dense(`blk.${l}.ffn_down.weight`, p.nFf, p.nEmbd),
    );
  }
  return { kvs, tensors };
}
