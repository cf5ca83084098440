/**
 * src/metrics/prompt/blocks.ts, with its real hashing thread: never a wait. A batch larger than
 * the thread's queue gets the rest delivered at once as `busy`; a reader's share is drawn before
 * any hashing; the chain is cut at the common unit of the readers' block sizes, and each reads
 * its own blocks from it (the trace's 512-token ids are the 16-token chain's every 32nd).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { PrefixHasher, blockIds, fullBlockIds, unitChars } from '../../../src/lib/block-hash.js';
import { judgeBatch } from '../../../src/metrics/batch.js';
import { MAX_QUEUED_JOBS, PromptBlocksStage, type HashedRequest, type PromptReader } from '../../../src/metrics/prompt/blocks.js';
import { parseSloConfig } from '../../../src/slo/config.js';
import { UNMEASURED, type RequestRecord } from '../../../src/record/record.js';

const SALT = 'blocks-test';
const record = (i: number): RequestRecord => ({
  ...UNMEASURED, startedAt: i, route: 'chat_completions', operation: 'chat', model: 'm', outcome: 'ok', status: 200, streamed: true,
  ttft: 0.1, ttfo: 0.1, e2e: 1, outputTokens: 5, tokenSource: 'usage', errorType: null,
});
const chatBody = (text: string) => new TextEncoder().encode(JSON.stringify({ model: 'm', messages: [{ role: 'user', content: text }] }));

function stage(): PromptBlocksStage {
  return new PromptBlocksStage({ tokenizers: [], hfHubCache: 'none', promptCharsPerToken: 4, promptHashSalt: SALT, upstreams: [] }, pino({ level: 'silent' }));
}
function reader(blockTokens: number, sample: number): PromptReader & { got: HashedRequest[] } {
  const got: HashedRequest[] = [];
  return { blockTokens, sample, got, read: (r) => got.push(...r) };
}
function batch(n: number, text: (i: number) => string) {
  const records = Array.from({ length: n }, (_, i) => record(i));
  return judgeBatch(records, 0, parseSloConfig({}, 'slos'), () => 'm', undefined, records.map((_, i) => ({ body: chatBody(text(i)), session: null })));
}

test('more than the queue holds: the rest is delivered as busy within the call, the queued ones hashed later', async () => {
  const s = stage();
  const r = reader(512, 1);
  s.subscribe(r);
  s.start();
  const n = MAX_QUEUED_JOBS + 44;
  try {
    s.ingest(batch(n, (i) => `prompt ${i}`));
    assert.equal(r.got.length, 44, 'delivered before ingest returned: nothing waited for');
    assert.ok(r.got.every((h) => h.skipped === 'busy' && h.blocks === null));
  } finally {
    await s.close();
  }
  assert.equal(r.got.length, n);
  assert.equal(r.got.filter((h) => h.blocks !== null).length, MAX_QUEUED_JOBS);
});

test('a share of 0 hashes nothing; the chain serves 512 and 16 alike', async () => {
  const s = stage();
  const none = reader(512, 0);
  s.subscribe(none);
  s.start();
  s.ingest(batch(20, (i) => `p${i}`));
  await s.close();
  assert.equal(none.got.length, 20);
  assert.ok(none.got.every((h) => h.skipped === 'sampled'), 'drawn before hashing');

  const both = stage();
  const trace = reader(512, 1);
  const cache = reader(16, 1);
  both.subscribe(trace);
  both.subscribe(cache);
  both.start();
  const text = 'x'.repeat(unitChars(512, 4) * 2 + 100);
  both.ingest(batch(1, () => text));
  await both.close();
  const h = trace.got[0]!;
  assert.equal(h.blocks!.unit, 16, 'cut once, at the common unit');
  assert.equal(cache.got[0], h, 'both readers get the same hashed request');
  // The same prompt hashed directly at 512: the ids are those of the 16-unit chain at every 32nd element.
  const rendered = `<|user|>\n${text}\n<|assistant|>\n`;
  const direct = new PrefixHasher(SALT).chars(rendered, 512, 4);
  assert.equal(blockIds(direct, 512).length, 3);
  assert.deepEqual(blockIds(h.blocks!, 512), blockIds(direct, 512));
  assert.equal(fullBlockIds(h.blocks!, 16).length, Math.floor(rendered.length / unitChars(16, 4)));
});
