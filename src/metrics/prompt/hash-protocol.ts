/** What the metrics side and the prompt hashing thread (hash-thread.ts) say to each other. */
import type { PromptBlocks } from '../../lib/block-hash.js';
import type { ApiName } from '../../record/routes.js';
import type { PromptOptions } from './options.js';

export type HasherData = Pick<PromptOptions, 'tokenizers' | 'hfHubCache'> & { salt: string; charsPerToken: number };

/** One request to hash: its body is bytes[start..end) of the message's buffer. */
export interface HashJob {
  id: number;
  api: ApiName;
  /** The model as requested (the tokenizer is looked up by it). */
  model: string;
  /** The upstream's name (a --tokenizers entry may name it); null when none served it. */
  upstream: string | null;
  start: number;
  end: number;
  /** The session header's value, to be hashed there (never kept). */
  session: string | null;
}

/** Jobs and their bodies (one buffer, transferred); `unit`: tokens per chain element. */
export interface ToHasher {
  jobs: HashJob[];
  bytes: ArrayBuffer;
  unit: number;
}

export interface HashResult {
  id: number;
  /** null: the body is not a request whose prompt can be read. */
  blocks: PromptBlocks | null;
  maxTokens: number | null;
  /** The client asked for a stream; null when the body could not be read. */
  stream: boolean | null;
  /** The session, hashed (12 hex characters of HMAC-SHA256 with the salt). */
  session: string | null;
  /** The tokenizer's source when the prompt was cut as tokens by one; null otherwise. */
  tokenizer: string | null;
  /** CPU-ish time spent on it (wall time on the hashing thread). */
  seconds: number;
}

export type FromHasher =
  | { type: 'done'; results: HashResult[] }
  /** A tokenizer would not load or render: its model falls back to the characters cut (said once per path). */
  | { type: 'tokenizer-failed'; path: string; error: string };
