/**
 * The Messages and Responses rows (src/lib/api-events.ts) against README's definitions: every
 * captured or reconstructed stream of both APIs, folded event by event through typedEventFacts
 * as the meter folds them (the last usage wins), gives the TTFT and TTFO events, the token
 * events, input (cache reads included for Messages), output, cached and reasoning tokens and
 * the stream error that test/helpers/typed-api-readme.ts reads off the fixture's text by
 * README's table; non-streamed bodies likewise. A few figures are also written out by hand
 * from the fixtures' text, so that the reader and the rows cannot agree on a wrong number.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { MESSAGES_API, RESPONSES_API, typedBodyFacts, typedEventFacts, type TypedApi } from '../../../src/lib/api-events.js';
import { FIXTURES, fixture } from '../../helpers.js';
import { readmeBodyFigures, readmeFigures, typedApiOf, type TypedApiName } from '../../helpers/typed-api-readme.js';

const ROW: Record<TypedApiName, TypedApi> = { messages: MESSAGES_API, responses: RESPONSES_API };

/** What the rows say over a whole stream, folded as the meter folds facts. */
function folded(row: TypedApi, events: Record<string, unknown>[]) {
  const out = { firstToken: -1, firstOutput: -1, tokenEvents: 0, input: -1, output: -1, cached: -1, reasoning: -1, error: false };
  events.forEach((e, i) => {
    const f = typedEventFacts(row, e);
    if (f.token) {
      out.tokenEvents++;
      if (out.firstToken < 0) out.firstToken = i;
    }
    if (f.visible && out.firstOutput < 0) out.firstOutput = i;
    if (f.promptTokens >= 0) out.input = f.promptTokens;
    if (f.completionTokens >= 0) out.output = f.completionTokens;
    if (f.cachedTokens >= 0) out.cached = f.cachedTokens;
    if (f.reasoningTokens >= 0) out.reasoning = f.reasoningTokens;
    if (f.error) out.error = true;
  });
  return out;
}

const TYPED = readdirSync(FIXTURES).filter((f) => f.endsWith('.sse') && typedApiOf(f) !== null).sort();

test('every typed stream: the rows give README\'s TTFT and TTFO events, token events, input, output, cached and reasoning tokens, errors', () => {
  assert.ok(TYPED.length >= 9, TYPED.join(', '));
  for (const file of TYPED) {
    const api = typedApiOf(file)!;
    const { events, models: _m, ...want } = readmeFigures(api, fixture(file).toString('utf8'));
    assert.deepEqual(folded(ROW[api], events), want, file);
  }
});

test('figures written out from the fixtures\' text: cache reads are input, thinking is not output, reasoning deltas are not output', () => {
  const figures = (file: string) => folded(ROW[typedApiOf(file)!], readmeFigures(typedApiOf(file)!, fixture(file).toString('utf8')).events);
  // message_start: input_tokens 25, cache_read_input_tokens 16; message_delta: output_tokens 8; seven text deltas from event 2 (the first data event is 0).
  assert.deepEqual(figures('sglang-messages-stream-cached-reconstructed.sse'), { firstToken: 2, firstOutput: 2, tokenEvents: 7, input: 41, output: 8, cached: 16, reasoning: -1, error: false });
  // Four thinking deltas (events 2-5) and a signature_delta (6), then text deltas (9-11) and a tool call's input_json_delta (14-16); output_tokens 17.
  assert.deepEqual(figures('vllm-messages-stream-reasoning-tool-reconstructed.sse'), { firstToken: 2, firstOutput: 9, tokenEvents: 10, input: 42, output: 17, cached: -1, reasoning: -1, error: false });
  // llama-server: cache_read_input_tokens 0 beside input_tokens 34; twelve text deltas; output_tokens 12.
  assert.deepEqual(figures('llama-server-messages-stream.sse'), { firstToken: 2, firstOutput: 2, tokenEvents: 12, input: 34, output: 12, cached: 0, reasoning: -1, error: false });
});

test('non-streamed bodies: usage read as README says', () => {
  for (const file of ['llama-server-messages-nonstream.http', 'llama-server-responses-nonstream.http']) {
    const api = typedApiOf(file)!;
    const text = fixture(file).toString('utf8');
    const body = JSON.parse(text.slice(text.indexOf('\r\n\r\n') >= 0 ? text.indexOf('\r\n\r\n') + 4 : text.indexOf('\n\n') + 2)) as Record<string, unknown>;
    const f = typedBodyFacts(ROW[api], body);
    assert.deepEqual({ input: f.promptTokens, output: f.completionTokens, cached: f.cachedTokens, reasoning: f.reasoningTokens }, readmeBodyFigures(api, body), file);
  }
  // Written out: the Messages body has input_tokens 1 and cache_read_input_tokens 33 (input 34, cached 33), output_tokens 12.
  const m = typedBodyFacts(MESSAGES_API, { usage: { cache_read_input_tokens: 33, input_tokens: 1, output_tokens: 12 } });
  assert.deepEqual([m.promptTokens, m.completionTokens, m.cachedTokens], [34, 12, 33]);
});

test('edges of README\'s rows: response.failed usage counts, input_tokens 0 beside cache reads, cache reads without input_tokens, events that are not objects', () => {
  // README: output tokens from response.completed / response.incomplete / response.failed usage.
  const failed = typedEventFacts(RESPONSES_API, { type: 'response.failed', response: { status: 'failed', usage: { input_tokens: 9, output_tokens: 4, input_tokens_details: { cached_tokens: 2 } } } });
  assert.deepEqual([failed.error, failed.promptTokens, failed.completionTokens, failed.cachedTokens], [true, 9, 4, 2]);
  // Messages input = input_tokens + cache_read_input_tokens + cache_creation_input_tokens, whatever input_tokens is.
  const allCached = typedEventFacts(MESSAGES_API, { type: 'message_start', message: { usage: { input_tokens: 0, cache_read_input_tokens: 10, cache_creation_input_tokens: 3, output_tokens: 1 } } });
  assert.deepEqual([allCached.promptTokens, allCached.cachedTokens, allCached.completionTokens], [13, 10, -1]);
  // Without input_tokens the input is not known, whatever else the usage says.
  const noInput = typedEventFacts(MESSAGES_API, { type: 'message_delta', usage: { output_tokens: 3, cache_read_input_tokens: 5 } });
  assert.deepEqual([noInput.promptTokens, noInput.completionTokens, noInput.cachedTokens], [-1, 3, 5]);
  for (const doc of [null, 'message_start', 7, ['message_start'], { type: 7 }]) {
    for (const row of [MESSAGES_API, RESPONSES_API]) assert.deepEqual(typedEventFacts(row, doc), typedEventFacts(row, {}), JSON.stringify(doc));
  }
});
