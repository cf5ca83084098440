/**
 * Long bodies are scanned for model/stream/stream_options instead of parsed whole. The scan
 * must agree with JSON.parse on every well-formed body, and hand anything doubtful back to
 * the full parse (null).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SCAN_FROM_BYTES, readGenerationRequest, scanTopLevel } from '../../../src/proxy/body.js';
import { mulberry32 } from '../../../src/lib/prng.js';

const FIELDS = ['model', 'stream', 'stream_options'];

function randomString(rand: () => number, max: number): string {
  const pieces = ['a', 'Z', ' ', '"', '\\', '\\"', '\n', '\t', 'é', '✓', '😀', '{', '}', '[', ']', ',', ':', 'usage', '\u0001', '/'];
  let s = '';
  const n = Math.floor(rand() * max);
  for (let i = 0; i < n; i++) s += pieces[Math.floor(rand() * pieces.length)];
  return s;
}

function randomValue(rand: () => number, depth: number): unknown {
  const r = rand();
  if (depth > 3 || r < 0.3) return randomString(rand, 12);
  if (r < 0.4) return Math.round(rand() * 1e6) / 100 - 5000;
  if (r < 0.5) return rand() < 0.5;
  if (r < 0.55) return null;
  if (r < 0.8) return Array.from({ length: Math.floor(rand() * 4) }, () => randomValue(rand, depth + 1));
  return Object.fromEntries(Array.from({ length: Math.floor(rand() * 4) }, () => [randomString(rand, 6), randomValue(rand, depth + 1)]));
}

/** A body as a client might send it: the fields anywhere, a long prompt, odd spacing. */
function randomBody(rand: () => number): string {
  const entries: [string, unknown][] = [['messages', [{ role: 'user', content: randomString(rand, 6000) }, { role: 'assistant', content: randomValue(rand, 0) }]]];
  if (rand() < 0.9) entries.push(['model', rand() < 0.9 ? randomString(rand, 20) : randomValue(rand, 1)]);
  if (rand() < 0.9) entries.push(['stream', rand() < 0.7 ? true : randomValue(rand, 2)]);
  if (rand() < 0.4) entries.push(['stream_options', rand() < 0.5 ? { include_usage: rand() < 0.5 } : randomValue(rand, 1)]);
  for (let i = Math.floor(rand() * 4); i > 0; i--) entries.push([randomString(rand, 8), randomValue(rand, 0)]);
  if (rand() < 0.2) entries.push(['model', 'duplicate-wins']);
  for (let i = entries.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [entries[i], entries[j]] = [entries[j]!, entries[i]!];
  }
  const ws = () => [' ', '', '\n', '\t', '\r\n  '][Math.floor(rand() * 5)]!;
  // An escaped key spelling now and then: JSON.parse reads "\u006dodel" as "model".
  const key = (k: string) => (k === 'model' && rand() < 0.1 ? '"\\u006dodel"' : JSON.stringify(k));
  return ws() + '{' + entries.map(([k, v]) => ws() + key(k) + ws() + ':' + ws() + JSON.stringify(v, null, rand() < 0.3 ? 1 : undefined) + ws()).join(',') + '}' + ws();
}

test('on 2,000 random well-formed bodies the scan finds exactly what JSON.parse finds', () => {
  const rand = mulberry32(7);
  for (let i = 0; i < 2000; i++) {
    const text = randomBody(rand);
    const doc = JSON.parse(text) as Record<string, unknown>;
    const scanned = scanTopLevel(Buffer.from(text), FIELDS);
    assert.ok(scanned, `body ${i} was not scanned: ${text.slice(0, 200)}`);
    for (const f of FIELDS) assert.deepEqual(scanned[f], doc[f], `body ${i}, field ${f}`);
  }
});

test('truncated, trailing or non-object bodies are handed back to the full parse', () => {
  const rand = mulberry32(11);
  for (let i = 0; i < 200; i++) {
    const text = Buffer.from(randomBody(rand).trimEnd());
    const cut = 1 + Math.floor(rand() * (text.length - 2));
    assert.equal(scanTopLevel(text.subarray(0, cut), FIELDS), null, `cut at ${cut}`);
  }
  for (const bad of ['[1,2]', '"x"', '{"a":1}x', '{"a" 1}', '{"a":1,}', '{a:1}', '{"model":"m"', '{"model":"m",', '{"a":[1,2}', '{"a":{"b":1]}', '{"model":tru}', '']) {
    assert.equal(scanTopLevel(Buffer.from(bad), FIELDS), null, bad);
  }
  assert.deepEqual(scanTopLevel(Buffer.from(' {} '), FIELDS), {});
});

test('a long body gets the same model, stream flag, injection and bytes as a short one would', () => {
  const prompt = 'lorem "ipsum" \\ dolor ✓ '.repeat(Math.ceil(SCAN_FROM_BYTES / 10));
  const cases: [Record<string, unknown>, boolean][] = [
    [{ messages: [{ role: 'user', content: prompt }], model: 'm1', stream: true }, true],
    [{ messages: [{ role: 'user', content: prompt }], model: 'm1', stream: true, stream_options: { include_usage: true } }, false],
    [{ messages: [{ role: 'user', content: prompt }], model: 'm1', stream: true, stream_options: { continuous_usage_stats: true } }, true],
    [{ messages: [{ role: 'user', content: prompt }], model: 'm1', stream: false }, false],
    [{ model: 'm1', stream: true, stream_options: null, messages: [{ role: 'user', content: prompt }] }, true],
  ];
  for (const [doc, injected] of cases) {
    const raw = Buffer.from(JSON.stringify(doc));
    assert.ok(raw.length >= SCAN_FROM_BYTES);
    const r = readGenerationRequest(raw, true);
    assert.equal(r.model, 'm1');
    assert.equal(r.stream, doc['stream']);
    assert.equal(r.injected, injected);
    assert.equal(r.unreadable, false);
    const sent = JSON.parse(r.body.toString()) as Record<string, unknown>;
    assert.deepEqual(sent['messages'], doc['messages']);
    if (injected) assert.equal((sent['stream_options'] as Record<string, unknown>)['include_usage'], true);
    else assert.equal(r.body, raw);
  }
  // A short body with an explicit null is rewritten too: a spliced key would lose to the later null.
  const shortNull = readGenerationRequest(Buffer.from('{"model":"m","stream":true,"stream_options":null}'), true);
  assert.equal(shortNull.injected, true);
  assert.deepEqual((JSON.parse(shortNull.body.toString()) as Record<string, unknown>)['stream_options'], { include_usage: true });
  const broken = Buffer.concat([Buffer.from(JSON.stringify({ model: 'm', stream: true, messages: [{ content: prompt }] })), Buffer.from('}')]);
  assert.equal(readGenerationRequest(broken, true).unreadable, true);
});
