/**
 * The byte-level fast path against the full parse: on every event of every captured
 * stream and on many thousands of random events (valid and broken), whenever the chat
 * scanner answers, it must say exactly what eventFacts(JSON.parse(...)) says; and it must
 * answer for the common events, or it is no fast path. One scanner serves every event here,
 * as one serves every stream of a proxy loop: nothing may leak from one scan into the next.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { ChatEventScanner } from '../../../src/proxy/event-scan.js';
import { matchTemplate } from '../../../src/proxy/json-lex.js';
import { emptyFacts, eventFacts, type EventFacts } from '../../../src/lib/events.js';
import { FIXTURES, fixture } from '../../helpers.js';

const scanner = new ChatEventScanner();

/** What the full path decides: the facts, or 'invalid' when JSON.parse throws. */
function full(buf: Buffer, s: number, e: number): EventFacts | 'invalid' {
  try {
    return eventFacts(JSON.parse(buf.toString('utf8', s, e)));
  } catch {
    return 'invalid';
  }
}

/** Returns whether the scan answered; fails the test if it answered differently. */
function agree(buf: Buffer, s = 0, e = buf.length): boolean {
  const scanned = scanner.scan(buf, s, e);
  if (scanned === null) return false;
  const want = full(buf, s, e);
  assert.notEqual(want, 'invalid', `scan accepted invalid JSON: ${buf.toString('utf8', s, e)}`);
  assert.deepEqual(scanned.facts, want, buf.toString('utf8', s, e));
  if (scanned.tokenStart >= 0) {
    // A token span lies inside the event, on a non-empty string body, and only a token event has one.
    assert.ok(scanned.facts.token && s < scanned.tokenStart && scanned.tokenStart < scanned.tokenEnd && scanned.tokenEnd < e, buf.toString('utf8', s, e));
    assert.equal(buf[scanned.tokenStart - 1], 0x22);
    assert.equal(buf[scanned.tokenEnd], 0x22);
  } else assert.equal(scanned.tokenEnd, -1);
  return true;
}

/** Every `data:` payload of a stream file, as byte ranges inside the whole file. */
function payloads(bytes: Buffer): [number, number][] {
  const out: [number, number][] = [];
  let pos = 0;
  while (pos < bytes.length) {
    let nl = bytes.indexOf(10, pos);
    if (nl < 0) nl = bytes.length;
    let end = nl > pos && bytes[nl - 1] === 13 ? nl - 1 : nl;
    if (bytes.subarray(pos, pos + 5).toString() === 'data:') {
      let s = pos + 5;
      if (bytes[s] === 32) s++;
      if (bytes.toString('utf8', s, end) !== '[DONE]') out.push([s, end]);
    }
    pos = nl + 1;
    void end;
    end = 0;
  }
  return out;
}

test('every event of every captured stream: the scan agrees with the full parse, inside the file buffer', () => {
  const files = readdirSync(FIXTURES).filter((f) => f.endsWith('.sse'));
  assert.ok(files.length >= 10);
  let events = 0;
  let answered = 0;
  for (const file of files) {
    const bytes = fixture(file);
    for (const [s, e] of payloads(bytes)) {
      events++;
      if (agree(bytes, s, e)) answered++;
    }
  }
  // Token deltas, role and finish chunks dominate real streams: the fast path must take them.
  assert.ok(answered / events > 0.8, `fast path answered only ${answered} of ${events} fixture events`);
});

test('the shapes of the common events are answered by the scan', () => {
  const common = [
    '{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}',
    '{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" tok"},"logprobs":null,"finish_reason":null}],"usage":null}',
    '{"id":"c","choices":[{"index":0,"delta":{"reasoning_content":"hm"},"finish_reason":null}]}',
    '{"id":"c","choices":[{"index":0,"delta":{"content":""},"finish_reason":"stop","stop_reason":null}]}',
    '{"id":"c","object":"text_completion","choices":[{"index":0,"text":" x","logprobs":null,"finish_reason":null}]}',
    '{"id":"c","choices":[],"usage":{"prompt_tokens":8,"total_tokens":28,"completion_tokens":20,"prompt_tokens_details":{"cached_tokens":0}}}',
    '{"id":"c","choices":[{"index":0,"delta":{"content":"a\\"b\\u00e9"}}],"usage":{"prompt_tokens":3,"completion_tokens":1}}',
  ];
  for (const c of common) assert.ok(agree(Buffer.from(c)), `not answered: ${c}`);
});

test('usage with token details (vLLM continuous usage, OpenAI reasoning) is answered by the scan, with the detail counts', () => {
  const cases: [string, number, number][] = [
    // vLLM with --enable-prompt-tokens-details and continuous_usage_stats: usage on every chunk.
    ['{"id":"c","choices":[{"index":0,"delta":{"content":" tok"},"logprobs":null,"finish_reason":null}],"usage":{"prompt_tokens":9,"total_tokens":12,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":8}}}', 8, -1],
    ['{"id":"c","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":30,"prompt_tokens_details":null,"completion_tokens_details":{"reasoning_tokens":21,"accepted_prediction_tokens":0}}}', -1, 21],
    ['{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":30,"prompt_tokens_details":{"audio_tokens":0,"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}}', 0, 0],
    ['{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":30,"prompt_tokens_details":{},"completion_tokens_details":null}}', -1, -1],
  ];
  for (const [c, cached, reasoning] of cases) {
    const scanned = scanner.scan(Buffer.from(c), 0, Buffer.byteLength(c));
    assert.ok(scanned !== null, `not answered: ${c}`);
    assert.equal(scanned.facts.cachedTokens, cached, c);
    assert.equal(scanned.facts.reasoningTokens, reasoning, c);
    assert.ok(agree(Buffer.from(c)), c);
  }
});

test('events the scan must leave to the full parse', () => {
  const hard = [
    '{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"f"}}]}}]}',
    '{"error":{"message":"boom"}}',
    '{"choices":[{"delta":{"con\\u0074ent":"x"}}]}', // an escaped key could spell content
    '{"choices":[{"delta":{"content":"a","content":""}}]}', // duplicate: the last one wins
    '{"choices":[{"delta":{"content":[{"type":"text","text":"x"}]}}]}',
    '{"choices":[{"delta":{"content":"x"}}]} trailing',
    '{"choices":[{"delta":{"content":"x"}}]',
    '{"choices":[{"delta":{"content":"x\u0001"}}]}', // raw control character: JSON.parse throws
    '{"usage":{"prompt_tokens":1e3}}',
    '{"usage":{"prompt_tokens_details":{"cached_tokens":1,"cached_tokens":2}}}', // duplicate: the last one wins
    '{"usage":{"prompt_tokens_details":{"cached_tokens":1.5}}}',
    '{"usage":{"completion_tokens_details":{"reasoning_tokens":-1}}}',
    '{"usage":{"prompt_tokens_details":{},"prompt_tokens_details":null}}',
    '{"usage":{"completion_tokens_details":[1]}}',
    '{"a":01}',
    '{"a":"\\x"}',
    '',
    '[1]',
  ];
  for (const h of hard) assert.equal(scanner.scan(Buffer.from(h), 0, Buffer.byteLength(h)), null, h);
});

test('[DONE] says only that the stream ended, and is no template; anything around it is left to the full parse', () => {
  const done = Buffer.from('data: [DONE]\n\n');
  // A token event first: nothing of it may stay in the answer for [DONE].
  agree(Buffer.from('{"choices":[{"delta":{"content":"x"}}],"usage":{"prompt_tokens":3,"completion_tokens":1}}'));
  const scanned = scanner.scan(done, 6, 12);
  assert.ok(scanned !== null);
  assert.deepEqual(scanned.facts, { ...emptyFacts(), terminal: true });
  assert.equal(scanned.tokenStart, -1);
  for (const text of ['[DONE] ', ' [DONE]', '[DONE', '[done]']) assert.equal(scanner.scan(Buffer.from(text), 0, text.length), null, text);
});

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => ((s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32);
}

test('20,000 random events, valid and broken: whenever the scan answers, it agrees', () => {
  const rand = rng(42);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const strings = ['', 'x', ' tok', 'é', 'a\\"b', '\\n', '\\u00e9', '\\\\', 'content', '\\"content\\":\\"x'];
  const scalar = (): string => pick([() => 'null', () => 'true', () => 'false', () => '0', () => '-1.5e3', () => '42', () => `"${pick(strings)}"`, () => '[]', () => '{}', () => '[1,"a",null]'])();
  const sp = () => pick(['', '', '', ' ', '\n', '\t ']);
  const obj = (members: [string, string][]) => `{${sp()}${members.map(([k, v]) => `"${k}"${sp()}:${sp()}${v}`).join(`,${sp()}`)}${sp()}}`;
  const partKeys = ['content', 'reasoning', 'reasoning_content', 'tool_calls', 'function_call', 'role', 'x'];
  const part = () => (rand() < 0.1 ? scalar() : obj(Array.from({ length: Math.floor(rand() * 4) }, () => [pick(partKeys), rand() < 0.3 ? scalar() : `"${pick(strings)}"`] as [string, string])));
  const choice = () => (rand() < 0.05 ? scalar() : obj(Array.from({ length: Math.floor(rand() * 4) }, () => {
    const k = pick(['delta', 'message', 'text', 'index', 'finish_reason', 'logprobs']);
    return [k, k === 'delta' || k === 'message' ? part() : scalar()] as [string, string];
  })));
  const detailValue = () => pick(['7', '0', '1.0', 'null', '"3"', '-2', '{}', '[]']);
  const details = () => (rand() < 0.2 ? scalar() : obj(Array.from({ length: Math.floor(rand() * 3) }, () => [pick(['cached_tokens', 'reasoning_tokens', 'audio_tokens', 'accepted_prediction_tokens']), detailValue()] as [string, string])));
  const usage = () => (rand() < 0.3 ? scalar() : obj(Array.from({ length: Math.floor(rand() * 5) }, () => {
    const k = pick(['prompt_tokens', 'completion_tokens', 'total_tokens', 'prompt_tokens_details', 'completion_tokens_details']);
    return [k, k.endsWith('_details') ? details() : pick(['7', '0', '12', '1.0', 'null', '"3"', '{"cached_tokens":1}'])] as [string, string];
  })));
  const event = () => obj(Array.from({ length: 1 + Math.floor(rand() * 5) }, () => {
    const k = pick(['choices', 'usage', 'error', 'id', 'model', 'created']);
    if (k === 'choices') return [k, rand() < 0.1 ? scalar() : `[${Array.from({ length: Math.floor(rand() * 3) }, choice).join(',')}]`] as [string, string];
    if (k === 'usage') return [k, usage()] as [string, string];
    if (k === 'error') return [k, rand() < 0.7 ? 'null' : scalar()] as [string, string];
    return [k, scalar()] as [string, string];
  }));
  const mutate = (s: string): string => {
    const i = Math.floor(rand() * (s.length + 1));
    return pick([() => s.slice(0, i), () => s.slice(0, i) + pick(['"', '{', ']', ',', '\\', ':', 'x', '\u0001']) + s.slice(i), () => s.slice(0, i) + s.slice(i + 1)])();
  };
  let answered = 0;
  let valid = 0;
  for (let i = 0; i < 20_000; i++) {
    const text = rand() < 0.25 ? mutate(event()) : event();
    // Inside a larger buffer, as the framer hands it over: the scan must not read past `end`.
    const buf = Buffer.from(`data: ${text}\n\n{"more":1}`);
    const s = 6;
    const e = s + Buffer.byteLength(text);
    if (full(buf, s, e) !== 'invalid') valid++;
    if (agree(buf, s, e)) answered++;
  }
  assert.ok(valid > 10_000 && answered > 3_000, `valid ${valid}, answered ${answered}`);
});

test('templates: an event that differs from an accepted token event only inside its token string says the same, or is refused', async () => {
  const rand = rng(7);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const shapes = [
    (t: string) => `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1728,"model":"m","choices":[{"index":0,"delta":{"content":"${t}"},"logprobs":null,"finish_reason":null}]}`,
    (t: string) => `{"id":"c","choices":[{"index":0,"delta":{"reasoning_content":"${t}"},"finish_reason":null}],"usage":null}`,
    (t: string) => `{"id":"c","object":"text_completion","choices":[{"index":0,"text":"${t}","logprobs":null,"finish_reason":null}]}`,
    (t: string) => `{"choices":[{"delta":{"role":"assistant","content":"${t}","tool_calls":[]}}]}`,
  ];
  const pieces = ['a', ' tok', 'é', '\\"', '\\\\', '\\n', '\\u00e9', '"', '\\', '\\u00', '\u0001', '\\x', '"}]}', ''];
  let accepted = 0;
  for (let i = 0; i < 20_000; i++) {
    const shape = pick(shapes);
    const tpl = Buffer.from(shape(' first'));
    const scanned = scanner.scan(tpl, 0, tpl.length);
    assert.ok(scanned !== null && scanned.tokenStart >= 0, 'a one-token event is a template');
    const facts = { ...scanned.facts };
    const vs = scanned.tokenStart;
    const ve = scanned.tokenEnd;
    let token = Array.from({ length: Math.floor(rand() * 4) }, () => pick(pieces)).join('');
    let text = shape(token);
    if (rand() < 0.1) text = text.replace('"index":0', '"index":1'); // a change outside the token
    if (rand() < 0.05) text = text.slice(0, -1);
    const buf = Buffer.from(`data: ${text}\n\n`);
    const s = 6;
    const e = s + Buffer.byteLength(text);
    if (!matchTemplate(buf, s, e, tpl, vs, ve)) continue;
    accepted++;
    const want = full(buf, s, e);
    assert.notEqual(want, 'invalid', `template accepted invalid JSON: ${text}`);
    assert.deepEqual(want, facts, text);
    token = '';
  }
  assert.ok(accepted > 3000, `accepted ${accepted}`);
});

test('the template path answers most token events of a captured vLLM stream, and every token chunk is counted', async () => {
  const { RequestMeter } = await import('../../../src/proxy/meter.js');
  const { SseFramer } = await import('../../../src/lib/sse.js');
  const bytes = fixture('vllm-chat-stream-reasoning-content-abridged.sse');
  const meter = new RequestMeter(0, false);
  const framer = new SseFramer(false, meter.onData, meter.onOversized);
  framer.feed(bytes);
  framer.end();
  assert.equal(meter.tokenChunks, 21);
  assert.ok(meter.templateHits >= 15, `template answered ${meter.templateHits} of 21 token events`);
});
