/**
 * The prompt hashing thread: reads each request body it is handed (request-text.ts), tokenizes
 * it as the engine does where it can (tokenizer.ts) or takes its characters, and cuts the chain
 * of salted prefix ids (lib/block-hash.ts). It runs beside the metrics thread at a lower
 * priority still, so that tokenizing a long prompt delays neither a scrape nor a chunk; the
 * bodies it is sent are dropped as soon as they are hashed.
 */
import { createHmac } from 'node:crypto';
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { PrefixHasher, type PromptBlocks } from '../../lib/block-hash.js';
import { charsText, readPromptRequest } from './request-text.js';
import { Tokenizers } from './tokenizer.js';
import type { FromHasher, HashJob, HasherData, HashResult, ToHasher } from './hash-protocol.js';

/** Below the metrics thread's nice 10: the hashing is the first thing a busy machine should starve. */
const HASH_THREAD_NICE = 15;

const data = workerData as HasherData;
const port = parentPort!;
const hasher = new PrefixHasher(data.salt);
const seenTokenizers = new Set<string>();
const tokenizers = new Tokenizers(data, process.env, (path, err) => post({ type: 'tokenizer-failed', path, error: err.message }));

function post(msg: FromHasher): void {
  port.postMessage(msg);
}

try {
  const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
  if (Number.isInteger(tid) && tid > 0) setPriority(tid, HASH_THREAD_NICE);
} catch {
  // Linux only; elsewhere the thread keeps its priority.
}

port.on('message', (msg: ToHasher) => {
  const results = msg.jobs.map((job) => hashOne(job, msg.unit, msg.bytes));
  post({ type: 'done', results });
});

function hashOne(job: HashJob, unit: number, bytes: ArrayBuffer): HashResult {
  const started = performance.now();
  const session = job.session === null ? null : createHmac('sha256', data.salt).update(job.session).digest('hex').slice(0, 12);
  const req = readPromptRequest(job.api, new Uint8Array(bytes, job.start, job.end - job.start));
  if (!req) return { id: job.id, blocks: null, maxTokens: null, stream: null, session, tokenizer: null, seconds: (performance.now() - started) / 1000 };
  let blocks: PromptBlocks | null = null;
  let tokenizer: string | null = null;
  if (req.promptIds) blocks = hasher.tokens(req.promptIds, unit);
  else {
    const tok = tokenizers.for(job.model, job.upstream);
    if (tok) {
      try {
        blocks = hasher.tokens(req.messages ? tok.chat(req.messages, req.tools) : tok.text(req.prompt ?? ''), unit);
        tokenizer = tok.source;
      } catch (err) {
        if (!seenTokenizers.has(`${tok.source}\0fail`)) post({ type: 'tokenizer-failed', path: tok.source, error: (err as Error).message });
        seenTokenizers.add(`${tok.source}\0fail`);
      }
    }
    blocks ??= hasher.chars(charsText(req) ?? '', unit, data.charsPerToken);
  }
  return { id: job.id, blocks, maxTokens: req.maxTokens, stream: req.stream, session, tokenizer, seconds: (performance.now() - started) / 1000 };
}
