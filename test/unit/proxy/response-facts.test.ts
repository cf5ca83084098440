/**
 * gen_ai.response.model and finish_reasons as the meter reads them off the bytes
 * (src/proxy/response-facts.ts), against the full parse of every event of every captured
 * stream, whatever the read splits; the Messages and Responses streams also through their own
 * API's meter, against the model their text names.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { SseFramer } from '../../../src/lib/sse.js';
import { RequestMeter } from '../../../src/proxy/meter.js';
import { eventFacts } from '../../../src/lib/events.js';
import { finishReasonsIn, modelIn } from '../../../src/proxy/response-facts.js';
import { FIXTURES, fixture } from '../../helpers.js';
import { typedApiOf } from '../../helpers/typed-api-readme.js';

/** What the full parse says: the first token event's model, and every distinct finish reason. */
function expected(bytes: Buffer): { model: string | null; reasons: string[] } {
  let model: string | null | undefined;
  const reasons: string[] = [];
  for (const line of bytes.toString('utf8').split(/\r?\n/)) {
    const m = /^data: ?(.*)$/.exec(line);
    if (!m || m[1] === '[DONE]') continue;
    let doc: Record<string, unknown>;
    try {
      doc = JSON.parse(m[1]!) as Record<string, unknown>;
    } catch {
      continue;
    }
    if (model === undefined && eventFacts(doc).token) model = typeof doc['model'] === 'string' ? doc['model'] : null;
    for (const c of (doc['choices'] as Record<string, unknown>[] | undefined) ?? []) {
      const r = c['finish_reason'];
      if (typeof r === 'string' && !reasons.includes(r)) reasons.push(r);
    }
  }
  return { model: model ?? null, reasons };
}

for (const file of readdirSync(FIXTURES).filter((f) => f.endsWith('.sse')).sort()) {
  test(`${file}: response model and finish reasons agree with the full parse`, () => {
    const bytes = fixture(file);
    const want = expected(bytes);
    for (const step of [bytes.length, 7, 1]) {
      const meter = new RequestMeter(0, false);
      meter.readsResponse = true;
      const framer = new SseFramer(false, meter.onData, meter.onOversized);
      for (let at = 0; at < bytes.length; at += step) framer.feed(bytes.subarray(at, Math.min(bytes.length, at + step)));
      framer.end();
      if (meter.failure) continue; // metering gave up (a fixture of broken bytes): nothing to compare
      assert.equal(meter.responseModel, want.model, `model, reads of ${step}`);
      assert.deepEqual(meter.finishReasons, want.reasons, `finish reasons, reads of ${step}`);
    }
  });
}

test('with tracing off (readsResponse false) no event is read for response facts', () => {
  const meter = new RequestMeter(0, false);
  const framer = new SseFramer(false, meter.onData, meter.onOversized);
  framer.feed(fixture('vllm-completions-stream-abridged.sse'));
  framer.end();
  assert.equal(meter.responseModel, null);
  assert.deepEqual(meter.finishReasons, []);
});

test('escaped, oversized and absent values are left out, not misread', () => {
  const ev = (s: string) => Buffer.from(s);
  const into: string[] = [];
  finishReasonsIn(ev('{"choices":[{"finish_reason":"st\\"op"},{"finish_reason":"length"},{"finish_reason":null}]}'), 0, 90, into);
  assert.deepEqual(into, ['length']);
  assert.equal(modelIn(ev(`{"model":"${'m'.repeat(200)}"}`), 0, 212), null);
  assert.equal(modelIn(ev('{"id":"x"}'), 0, 10), null);
  const b = ev('{"model":"a"} {"model":"b"}');
  assert.equal(modelIn(b, 14, b.length), 'b', 'only inside the event');
});

// The typed-event APIs through their own meter (route messages or responses): the response model
// is the one the stream names (message_start's message.model, response.created's response.model);
// each typed fixture writes a single model, read here off the text.
for (const file of readdirSync(FIXTURES).filter((f) => f.endsWith('.sse') && typedApiOf(f) !== null).sort()) {
  test(`${file} through the ${typedApiOf(file)} meter: the response model the stream names`, () => {
    const bytes = fixture(file);
    const models = [...new Set([...bytes.toString('utf8').matchAll(/"model":"([^"]*)"/g)].map((m) => m[1]!))];
    assert.equal(models.length, 1, `${file} names one model: ${models.join(', ')}`);
    for (const step of [bytes.length, 7, 1]) {
      const meter = new RequestMeter(0, false, undefined, typedApiOf(file)!);
      meter.readsResponse = true;
      const framer = new SseFramer(false, meter.onData, meter.onOversized);
      for (let at = 0; at < bytes.length; at += step) framer.feed(bytes.subarray(at, Math.min(bytes.length, at + step)));
      framer.end();
      assert.equal(meter.failure, null, `${file}: metered whole, reads of ${step}`);
      assert.equal(meter.responseModel, models[0], `model, reads of ${step}`);
    }
  });
}
