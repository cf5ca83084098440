/**
 * Prompts for a replayed request: the recorded input length, sharing exactly the recorded
 * prefixes. Each hash id gives one block of text, the same for the same id (and the same
 * namespace) in every request and on every run; the request's own remainder is text no other
 * request has. The text is words of the simulator's vocabulary (src/sim/text.ts), each word
 * with its leading space, so blocks join at word boundaries and a tokenizer cuts them the same
 * way wherever they stand.
 *
 * Lengths are in the target's tokens only through a scale: characters of this text per token,
 * and the tokens the API's template adds around the content (chat's role markers), measured
 * by calibrate.ts; without a measurement, the simulator's 4 characters per token and nothing
 * for the template.
 */
import { CHARS_PER_TOKEN, TOKENS, fnv1a, nextToken, prng } from '../../sim/text.js';
import type { ReplayRequest } from './workload.js';

export interface TokenScale {
  /** Characters of the synthetic text per token of the target's tokenizer. */
  charsPerToken: number;
  /** Tokens the API's template adds around the content. */
  overhead: number;
}

export const ESTIMATED_SCALE: TokenScale = { charsPerToken: CHARS_PER_TOKEN, overhead: 0 };

/** Vocabulary entries from shortest, to end a text on exactly its length. */
const BY_LENGTH = [...TOKENS].sort((a, b) => a.length - b.length);

/** Exactly `chars` characters of words, the same for the same seed. */
export function wordText(seed: number, chars: number): string {
  const rand = prng(seed);
  let s = '';
  while (s.length < chars) {
    const left = chars - s.length;
    let t = TOKENS[nextToken(rand)]!;
    if (t.length > left) {
      // The words that still fit (punctuation always does): the text ends on a whole word.
      let n = 0;
      while (n < BY_LENGTH.length && BY_LENGTH[n]!.length <= left) n++;
      t = BY_LENGTH[Math.floor(rand() * n)]!;
    }
    s += t;
  }
  return s;
}

/** One hash id's block: `chars` characters (a partial block is the start of the full one). */
export function blockText(salt: string, namespace: number, hashId: number, fullChars: number, chars = fullChars): string {
  return wordText(fnv1a(`${salt}|block|${namespace}|${hashId}`), fullChars).slice(0, chars);
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
  const target = Math.max(1, inputLength - scale.overhead);
  const fullChars = Math.max(1, Math.round(req.blockSize * scale.charsPerToken));
  let text = '';
  let tokens = 0;
  for (const [i, id] of hashIds.entries()) {
    const size = i === hashIds.length - 1 ? Math.min(req.blockSize, inputLength - i * req.blockSize) : req.blockSize;
    text += blockText(salt, req.namespace, id, fullChars, size === req.blockSize ? fullChars : Math.round(size * scale.charsPerToken));
    tokens += size;
  }
  const wanted = Math.max(1, Math.round(target * scale.charsPerToken));
  if (tokens >= target) return text.slice(0, wanted);
  return text + wordText(fnv1a(`${salt}|tail|${req.file}|${line}`), Math.max(0, wanted - text.length));
}
