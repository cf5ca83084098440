/**
 * Each Messages and Responses stream through the meter of its API (src/proxy/meter.ts, route
 * messages or responses), one event per read with the clock at the event's number: TTFT and
 * TTFO land on the events README's table names (TTFO never on a thinking or reasoning delta),
 * and the record's input (cache reads included for Messages), output, cached and reasoning
 * tokens and the stream error are the figures test/helpers/typed-api-readme.ts reads off the
 * fixture's text. Read in 7-byte and 1-byte pieces, the counts are the same.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { SseFramer } from '../../../src/lib/sse.js';
import { RequestMeter } from '../../../src/proxy/meter.js';
import { FIXTURES, fixture } from '../../helpers.js';
import { readmeFigures, typedApiOf, type TypedApiName } from '../../helpers/typed-api-readme.js';

const TYPED = readdirSync(FIXTURES).filter((f) => f.endsWith('.sse') && typedApiOf(f) !== null).sort();

/** The meter after the stream, fed one SSE event per read, the clock at (data event number + 1) s; or in `step`-byte reads. */
function metered(api: TypedApiName, text: string, step?: number): RequestMeter {
  const meter = new RequestMeter(0, false, undefined, api);
  const framer = new SseFramer(false, meter.onData, meter.onOversized);
  if (step !== undefined) {
    const bytes = Buffer.from(text);
    for (let at = 0; at < bytes.length; at += step) framer.feed(bytes.subarray(at, Math.min(bytes.length, at + step)));
  } else {
    let n = 0;
    for (const block of text.split(/(?<=\n\n)/)) {
      meter.now = (n + 1) * 1000;
      if (/^data:/m.test(block)) n++;
      framer.feed(Buffer.from(block));
    }
  }
  framer.end();
  return meter;
}

const base = (route: TypedApiName) => ({ route, operation: 'chat', model: 'm', status: 200, streamed: true, outcome: 'ok' as const, end: 100_000, errorType: null, tenant: null });

test('every typed stream through its meter: TTFT and TTFO at README\'s events, tokens, cached and reasoning counts, the stream error', () => {
  assert.ok(TYPED.length >= 9, TYPED.join(', '));
  for (const file of TYPED) {
    const api = typedApiOf(file)!;
    const text = fixture(file).toString('utf8');
    const want = readmeFigures(api, text);
    const meter = metered(api, text);
    assert.equal(meter.failure, null, file);
    const r = meter.toRecord(base(api));
    assert.deepEqual({
      ttft: r.ttft, ttfo: r.ttfo, inputTokens: r.inputTokens, inputTokensKnown: r.inputTokensKnown, outputTokens: r.outputTokens,
      tokenSource: r.tokenSource, cachedInputTokens: r.cachedInputTokens, reasoningTokens: r.reasoningTokens, error: meter.sawErrorEvent,
    }, {
      // The clock reads event number + 1 seconds when event `n` arrives.
      ttft: want.firstToken < 0 ? -1 : want.firstToken + 1,
      ttfo: want.firstOutput < 0 ? -1 : want.firstOutput + 1,
      inputTokens: Math.max(0, want.input), inputTokensKnown: want.input >= 0,
      // Usage when the stream gives it, else the token events counted (README: tokenSource).
      outputTokens: want.output >= 0 ? want.output : want.tokenEvents,
      tokenSource: want.output >= 0 ? 'usage' : want.tokenEvents > 0 ? 'chunks' : 'none',
      cachedInputTokens: want.cached, reasoningTokens: want.reasoning, error: want.error,
    }, file);
    for (const step of [7, 1]) {
      const pieces = metered(api, text, step).toRecord(base(api));
      assert.deepEqual([pieces.inputTokens, pieces.outputTokens, pieces.cachedInputTokens, pieces.reasoningTokens], [r.inputTokens, r.outputTokens, r.cachedInputTokens, r.reasoningTokens], `${file}, reads of ${step}`);
    }
  }
});

test('a reasoning stream: TTFO is the first text delta, not the first thinking delta (figures written out from the fixture)', () => {
  // vllm-messages-stream-reasoning-tool-reconstructed.sse: data events 2-5 are thinking deltas, 9 the first text delta;
  // usage: input_tokens 42, output_tokens 17.
  const r = metered('messages', fixture('vllm-messages-stream-reasoning-tool-reconstructed.sse').toString('utf8')).toRecord(base('messages'));
  assert.deepEqual([r.ttft, r.ttfo, r.inputTokens, r.outputTokens], [3, 10, 42, 17]);
  // sglang-messages-stream-cached-reconstructed.sse: input_tokens 25 and cache_read_input_tokens 16 are input; output_tokens 8.
  const c = metered('messages', fixture('sglang-messages-stream-cached-reconstructed.sse').toString('utf8')).toRecord(base('messages'));
  assert.deepEqual([c.inputTokens, c.cachedInputTokens, c.outputTokens], [41, 16, 8]);
});
