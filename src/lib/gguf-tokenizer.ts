/**
 * A GGUF file's tokenizer as Hugging Face `tokenizer.json` data, so that one JavaScript
 * tokenizer (@huggingface/tokenizers) tokenizes as llama.cpp does for a model that ships only
 * as GGUF. Pure: metadata in (gguf-read.ts readGgufMetadata), plain objects out.
 *
 * SentencePiece vocabularies (`tokenizer.ggml.model` = `llama`) carry pieces and scores but no
 * merges: llama.cpp merges the adjacent pair whose result scores highest. That is BPE whose
 * merges are every split of every normal piece into two pieces of the vocabulary, ranked by the
 * merged piece's score (the order Hugging Face's own SentencePiece conversion uses), with byte
 * fallback (`<0xNN>` pieces) and a space prefix, `▁` for every space. Only that model is
 * converted; for another (`gpt2` byte-level BPE needs llama.cpp's per-model pre-tokenizer
 * regexes), the caller falls back to cutting characters.
 */
import type { GgufKv } from './gguf.js';
import { kvValue } from './gguf-read.js';

export interface GgufTokenizer {
  /** tokenizer.json's content. */
  tokenizer: Record<string, unknown>;
  /** tokenizer_config.json's content (special token names). */
  config: Record<string, unknown>;
  /** The model's chat template; null when the file has none (llama.cpp then uses chatml). */
  chatTemplate: string | null;
  /** llama.cpp adds the BOS token to every prompt it tokenizes (chat and completions alike) when this is true. */
  addBos: boolean;
  bosToken: string | null;
  eosToken: string | null;
}

/** llama.cpp's token types (llama_token_type). */
const NORMAL = 1;
const UNKNOWN = 2;
const CONTROL = 3;
const USER_DEFINED = 4;
const BYTE = 6;

export class UnsupportedTokenizer extends Error {}

export function tokenizerFromGguf(kvs: readonly GgufKv[]): GgufTokenizer {
  const model = kvValue(kvs, 'tokenizer.ggml.model');
  if (model !== 'llama') throw new UnsupportedTokenizer(`GGUF tokenizer model "${String(model)}" is not converted (only SentencePiece "llama" is)`);
  const tokens = arrayOf<string>(kvs, 'tokenizer.ggml.tokens');
  const scores = arrayOf<number>(kvs, 'tokenizer.ggml.scores');
  const types = arrayOf<number>(kvs, 'tokenizer.ggml.token_type');
  if (scores.length !== tokens.length || types.length !== tokens.length) throw new UnsupportedTokenizer('GGUF tokenizer arrays differ in length');
  const vocab: Record<string, number> = {};
  tokens.forEach((t, i) => {
    if (!(t in vocab)) vocab[t] = i;
  });
  const special = (key: string) => {
    const id = kvValue(kvs, key);
    return typeof id === 'number' && id >= 0 && id < tokens.length ? tokens[id]! : null;
  };
  const unk = special('tokenizer.ggml.unknown_token_id');
  const bos = special('tokenizer.ggml.bos_token_id');
  const eos = special('tokenizer.ggml.eos_token_id');
  const addBos = kvValue(kvs, 'tokenizer.ggml.add_bos_token') !== false;
  const spacePrefix = kvValue(kvs, 'tokenizer.ggml.add_space_prefix') !== false;
  const added = types.flatMap((type, id) =>
    type === UNKNOWN || type === CONTROL || type === USER_DEFINED
      ? [{ id, content: tokens[id]!, single_word: false, lstrip: false, rstrip: false, normalized: type === USER_DEFINED, special: type !== USER_DEFINED }]
      : [],
  );
  const normalizers: unknown[] = [{ type: 'Replace', pattern: { String: ' ' }, content: '\u2581' }];
  if (spacePrefix) normalizers.unshift({ type: 'Prepend', prepend: '\u2581' });
  const tokenizer = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer: { type: 'Sequence', normalizers },
    pre_tokenizer: wordsStayApart(tokens, types) ? WORDS : null,
    post_processor: null,
    decoder: {
      type: 'Sequence',
      decoders: [{ type: 'Replace', pattern: { String: '\u2581' }, content: ' ' }, { type: 'ByteFallback' }, { type: 'Fuse' }, ...(spacePrefix ? [{ type: 'Strip', content: ' ', start: 1, stop: 0 }] : [])],
    },
    model: {
      type: 'BPE', dropout: null, unk_token: unk, continuing_subword_prefix: null, end_of_word_suffix: null,
      fuse_unk: true, byte_fallback: types.includes(BYTE), ignore_merges: false, vocab, merges: spmMerges(tokens, scores, types, vocab),
    },
  };
  const chatTemplate = kvValue(kvs, 'tokenizer.chat_template');
  return {
    tokenizer,
    config: { bos_token: bos, eos_token: eos, unk_token: unk, add_bos_token: false, add_eos_token: false },
    chatTemplate: typeof chatTemplate === 'string' ? chatTemplate : null,
    addBos: addBos && bos !== null,
    bosToken: bos,
    eosToken: eos,
  };
}

/**
 * SentencePiece (split by whitespace) never makes a piece that carries `▁` after another
 * character, so no merge crosses the start of a `▁`-led word: cutting the text into runs of
 * `▁` plus what follows up to the next `▁` changes no token, and spares the BPE a quadratic
 * walk over a whole prompt as one word (64 kB: seconds, against milliseconds cut).
 */
const WORDS = { type: 'Split', pattern: { Regex: '\u2581*[^\u2581]+|\u2581+' }, behavior: 'Isolated', invert: false };

function wordsStayApart(tokens: readonly string[], types: readonly number[]): boolean {
  return tokens.every((t, i) => types[i] !== NORMAL || !/[^\u2581]\u2581/.test(t));
}

/**
 * Every way to split a normal piece into two pieces of the vocabulary, ranked by the merged
 * piece's score (highest first), then by the left piece's id and the right one's.
 */
export function spmMerges(tokens: readonly string[], scores: readonly number[], types: readonly number[], vocab: Readonly<Record<string, number>>): [string, string][] {
  const merges: { left: string; right: string; score: number; l: number; r: number }[] = [];
  tokens.forEach((piece, id) => {
    if (types[id] !== NORMAL) return;
    const chars = Array.from(piece);
    for (let i = 1; i < chars.length; i++) {
      const left = chars.slice(0, i).join('');
      const right = chars.slice(i).join('');
      const l = vocab[left];
      const r = vocab[right];
      if (l !== undefined && r !== undefined) merges.push({ left, right, score: scores[id]!, l, r });
    }
  });
  merges.sort((a, b) => b.score - a.score || a.l - b.l || a.r - b.r);
  return merges.map((m) => [m.left, m.right]);
}

function arrayOf<T>(kvs: readonly GgufKv[], key: string): T[] {
  const v = kvValue(kvs, key);
  if (v === undefined || typeof v !== 'object' || !('items' in v)) throw new UnsupportedTokenizer(`GGUF has no ${key}`);
  return v.items as T[];
}
