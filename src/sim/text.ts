/**
 * Deterministic stand-ins for a tokenizer and a model: a seeded PRNG, a word list whose
 * entries are one "token" each (already JSON-escaped, so chunks are built by concatenation),
 * prompt token estimates and block hashes of the prompt for the prefix cache.
 */

/** The seeded PRNG for simulated text and arrivals. */
export { mulberry32 as prng } from '../lib/prng.js';

/** FNV-1a over a string, continuing from `h` (chained hashes of block-aligned prefixes). */
export function fnv1a(text: string, h = 0x811c9dc5, from = 0, to = text.length): number {
  for (let i = from; i < to; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

export function hexId(rand: () => number, digits = 32): string {
  let s = '';
  while (s.length < digits) s += Math.floor(rand() * 0x100000000).toString(16).padStart(8, '0');
  return s.slice(0, digits);
}

/** About 4 characters per token, as for English text with Llama-family tokenizers. */
export const CHARS_PER_TOKEN = 4;

export function estimateTokens(text: string): number {
  return Math.max(1, Math.ceil(text.length / CHARS_PER_TOKEN));
}

/**
 * Hashes of each full block of the prompt, each chained to the one before, so equal
 * hashes mean equal prefixes (what vLLM's automatic prefix caching keys blocks on).
 */
export function blockHashes(text: string, blockSize: number): number[] {
  const blockChars = blockSize * CHARS_PER_TOKEN;
  const out: number[] = [];
  let h = 0x811c9dc5;
  for (let end = blockChars; end <= text.length; end += blockChars) {
    h = fnv1a(text, h, end - blockChars, end);
    out.push(h);
  }
  return out;
}

const WORDS = (
  'the of and to in is that for it as was with be by on not he this are or his from at which but have an they you ' +
  'were her she there one all we their has been would when more will who if no out so said what up its about into ' +
  'than them can only other new some could time these two may then do first any my now such like our over man me ' +
  'even most made after also did many before must through back years where much your way well down should because ' +
  'each just those people how too little state good very make world still own see men work long get here between ' +
  'both life being under never day same another know while last might us great old year off come since against go ' +
  'came right used take three model token server request latency batch cache memory stream queue engine'
).split(' ');
const PUNCT = ['.', ',', '?', ';', ':'];

/** One generated token as JSON-escaped text (here: never needs escaping). */
export const TOKENS: readonly string[] = [...WORDS.map((w) => ' ' + w), ...PUNCT];

/** Indices into TOKENS, mostly words with some punctuation. */
export function nextToken(rand: () => number): number {
  const r = rand();
  if (r < 0.08) return WORDS.length + Math.floor((r / 0.08) * PUNCT.length);
  return Math.floor(rand() * WORDS.length);
}
