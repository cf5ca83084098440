import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readGenerationRequest } from '../../../src/proxy/body.js';

test('injects include_usage by splicing, leaving every other byte as the client sent it', () => {
  const raw = Buffer.from('{ "model" : "m",\n "stream": true, "messages": [] }');
  const r = readGenerationRequest(raw, true);
  assert.equal(r.injected, true);
  assert.equal(r.body.toString(), '{"stream_options":{"include_usage":true}, "model" : "m",\n "stream": true, "messages": [] }');
  assert.deepEqual(JSON.parse(r.body.toString()).stream_options, { include_usage: true });
  assert.equal(r.model, 'm');
});

test('merges into existing stream_options; leaves an explicit include_usage:true alone', () => {
  const merged = readGenerationRequest(Buffer.from('{"stream":true,"stream_options":{"continuous_usage_stats":true}}'), true);
  assert.equal(merged.injected, true);
  assert.deepEqual(JSON.parse(merged.body.toString()).stream_options, { continuous_usage_stats: true, include_usage: true });
  const asked = Buffer.from('{"stream":true,"stream_options":{"include_usage":true}}');
  const r = readGenerationRequest(asked, true);
  assert.equal(r.injected, false);
  assert.equal(r.body, asked);
});

test('non-streaming, disabled injection, odd stream_options and unreadable bodies are forwarded unchanged', () => {
  for (const [text, inject] of [
    ['{"model":"m","stream":false}', true],
    ['{"model":"m","stream":true}', false],
    ['{"model":"m","stream":true,"stream_options":"yes"}', true],
    ['not json at all', true],
    ['[1,2,3]', true],
  ] as const) {
    const raw = Buffer.from(text);
    const r = readGenerationRequest(raw, inject);
    assert.equal(r.body, raw, text);
    assert.equal(r.injected, false, text);
  }
  assert.equal(readGenerationRequest(Buffer.from('nope'), true).unreadable, true);
});

test('the model name is truncated to a bounded length', () => {
  const r = readGenerationRequest(Buffer.from(JSON.stringify({ model: 'x'.repeat(10_000) })), true);
  assert.equal(r.model.length, 256);
});
