/**
 * Prompts for a replayed request: the recorded input length, sharing exactly the recorded
 * prefixes. Each hash id gives one block of text, the same for the same id (and the same
 * namespace) in every request and on every run; the request's own remainder is text no other
 * request has.
 *
 * The text is words of one token each, so a prompt's length in tokens is its length in words
 * whatever the engine: common three-letter English words with their leading space, four
 * characters each. Measured with llama-server's /tokenize, every one of them is exactly one
 * token in the Llama 2 (SentencePiece), Llama 3 (BPE), Qwen2 and GPT-2 vocabularies, in any
 * order, and the simulator counts four characters per token (src/sim/text.ts); docs/bench.md
 * has the figures. Blocks join at word boundaries, so a tokenizer cuts them the same way
 * wherever they stand. What an engine adds (the chat template, a BOS token) and a tokenizer
 * that splits some words are measured by calibrate.ts as a scale.
 */
import { fnv1a, prng } from '../../sim/text.js';
import type { ReplayRequest } from './workload.js';

export interface TokenScale {
  /** The target's tokens per word of this text (1 for the tokenizers above). */
  tokensPerWord: number;
  /** Tokens the API's template adds around the content. */
  overhead: number;
}

export const ESTIMATED_SCALE: TokenScale = { tokensPerWord: 1, overhead: 0 };

/** One token each, four characters each (leading space included). */
export const WORDS: readonly string[] = (
  'the and for was are but not you all can her one our out day get has him his how man new now old see two way who boy ' +
  'did its let put say she too use any may end off own set try big ask men run yes yet far few got law car air eye job lot ' +
  'top red six ten age act add ago arm art bad bed bit box buy cut dog due eat fit fly gas hot key kid leg lie low map mix ' +
  'net oil pay per pop sea sky son sun tax tea via win'
).split(' ').map((w) => ` ${w}`);

/** `words` words, the same for the same seed. */
export function wordText(seed: number, words: number): string {
  const rand = prng(seed);
  let s = '';
  for (let i = 0; i < words; i++) s += WORDS[Math.floor(rand() * WORDS.length)]!;
  return s;
}

/** One hash id's block of `fullWords` words, or its first `words` (a partial block). */
export function blockText(salt: string, namespace: number, hashId: number, fullWords: number, words = fullWords): string {
  return wordText(fnv1a(`${salt}|block|${namespace}|${hashId}`), fullWords).slice(0, 4 * words);
}

type PromptRequest = Pick<ReplayRequest, 'file' | 'namespace' | 'blockSize'> & { record: Pick<ReplayRequest['record'], 'line' | 'inputLength' | 'hashIds'> };

/**
 * The request's content: its hash blocks, then its own remainder, sized so that content plus
 * the template come to input_length tokens. The blocks follow the three layouts traces use:
 * every id a full block; the last id a partial block (Mooncake's own traces: ids = ceil(input
 * / block)); ids for a prefix only, the rest not shared. When the template's tokens do not
 * leave room for every block, the last blocks are cut (the leading ones stay shared).
 * `salt` makes every block new (warm-up requests must not cache what the replay will ask).
 */
export function replayPrompt(req: PromptRequest, scale: TokenScale, salt = 'replay'): string {
  const { inputLength, hashIds, line } = req.record;
  const words = (tokens: number) => Math.max(0, Math.round(tokens / scale.tokensPerWord));
  const fullWords = Math.max(1, words(req.blockSize));
  const wanted = Math.max(1, words(inputLength - scale.overhead));
  let text = '';
  for (const [i, id] of hashIds.entries()) {
    const size = i === hashIds.length - 1 ? Math.min(req.blockSize, inputLength - i * req.blockSize) : req.blockSize;
    text += blockText(salt, req.namespace, id, fullWords, size === req.blockSize ? fullWords : words(size));
    if (text.length >= 4 * wanted) return text.slice(0, 4 * wanted);
  }
  return text + wordText(fnv1a(`${salt}|tail|${req.file}|${line}`), wanted - text.length / 4);
}
