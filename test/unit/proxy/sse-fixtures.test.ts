/** Every captured stream, fed through the framer and meter under random read splits. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { SseFramer } from '../../../src/lib/sse.js';
import { RequestMeter } from '../../../src/proxy/meter.js';
import { FIXTURES, fixture } from '../../helpers.js';
import { STREAMS, TYPED_STREAMS, type StreamExpectation, type TypedStreamExpectation } from '../../fixture-table.js';
import type { ApiName } from '../../../src/record/routes.js';

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => ((s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32);
}

function meterStream(bytes: Buffer, splits: number[], api: ApiName = 'chat'): { meter: RequestMeter; order: number[] } {
  const meter = new RequestMeter(0, false, undefined, api);
  const order: number[] = [];
  let event = -1;
  const onData = (buf: Buffer, s: number, e: number) => {
    event++;
    const before = meter.tokenChunks;
    const v = meter.onData(buf, s, e);
    if (meter.tokenChunks > before) order.push(event);
    return v;
  };
  const framer = new SseFramer(false, onData, meter.onOversized);
  let from = 0;
  for (const at of [...splits, bytes.length]) {
    meter.now = event + 1; // timestamps = index of the next event, so TTFT reads as an index
    framer.feed(bytes.subarray(from, at));
    from = at;
  }
  framer.end();
  return { meter, order };
}

test('the table covers every .sse fixture', () => {
  const files = readdirSync(FIXTURES).filter((f) => f.endsWith('.sse')).sort();
  assert.deepEqual([...STREAMS, ...TYPED_STREAMS].map((s) => s.file).sort(), files);
});

for (const exp of [...STREAMS, ...TYPED_STREAMS] as (StreamExpectation | TypedStreamExpectation)[]) {
  test(`${exp.file}: token chunks, first token, usage, error`, () => {
    const bytes = fixture(exp.file);
    const rand = rng(exp.file.length);
    for (let trial = 0; trial < 50; trial++) {
      const splits = trial === 0 ? [] : [...new Set(Array.from({ length: 1 + Math.floor(rand() * 20) }, () => Math.floor(rand() * bytes.length)))].sort((a, b) => a - b);
      const typed = 'path' in exp ? (exp as TypedStreamExpectation) : null;
      const api: ApiName = typed ? (typed.path === '/v1/messages' ? 'messages' : 'responses') : 'chat';
      const { meter, order } = meterStream(bytes, splits, api);
      assert.equal(meter.failure, null);
      assert.equal(meter.tokenChunks, exp.tokenChunks);
      assert.equal(order[0] ?? -1, exp.firstToken);
      assert.equal(meter.sawErrorEvent, exp.errorEvent);
      const rec = meter.toRecord({ route: 'chat_completions', operation: 'chat', model: 'm', status: 200, streamed: true, outcome: 'ok', end: 1000, errorType: null, tenant: null });
      assert.equal(rec.outputTokens, exp.outputTokens);
      assert.equal(rec.tokenSource, exp.source);
      if (typed) {
        assert.equal(rec.inputTokens, typed.inputTokens);
        assert.equal(Math.max(0, rec.cachedInputTokens), typed.cachedTokens);
        assert.equal(Math.max(0, rec.reasoningTokens), typed.reasoningTokens);
      }
    }
  });
}
