/**
 * The typed-event fast path (Anthropic Messages, OpenAI Responses) against the full parse:
 * on every event of every captured or reconstructed stream of both APIs, on the common shapes,
 * and on many thousands of random events (valid and broken), whenever the API's scanner answers
 * it says exactly what typedEventFacts(JSON.parse(...)) says; and it answers the common events.
 * A token span it gives (the template the meter adopts) holds: an event that differs from it only
 * inside the token string says the same, or is refused.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { TypedEventScanner, typedScanTable } from '../../../src/proxy/event-scan-typed.js';
import { matchTemplate } from '../../../src/proxy/json-lex.js';
import { MESSAGES_API, RESPONSES_API, typedEventFacts, type TypedApi } from '../../../src/lib/api-events.js';
import { emptyFacts, type EventFacts } from '../../../src/lib/events.js';
import { FIXTURES, fixture } from '../../helpers.js';

const SCANNERS = new Map([MESSAGES_API, RESPONSES_API].map((api) => [api, new TypedEventScanner(typedScanTable(api))]));

function full(api: TypedApi, buf: Buffer, s: number, e: number): EventFacts | 'invalid' {
  try {
    return typedEventFacts(api, JSON.parse(buf.toString('utf8', s, e)));
  } catch {
    return 'invalid';
  }
}

function agree(api: TypedApi, buf: Buffer, s = 0, e = buf.length): boolean {
  const scanned = SCANNERS.get(api)!.scan(buf, s, e);
  if (scanned === null) return false;
  const want = full(api, buf, s, e);
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

function payloads(bytes: Buffer): [number, number][] {
  const out: [number, number][] = [];
  let pos = 0;
  while (pos < bytes.length) {
    let nl = bytes.indexOf(10, pos);
    if (nl < 0) nl = bytes.length;
    const end = nl > pos && bytes[nl - 1] === 13 ? nl - 1 : nl;
    if (bytes.subarray(pos, pos + 5).toString() === 'data:') {
      let s = pos + 5;
      if (bytes[s] === 32) s++;
      out.push([s, end]);
    }
    pos = nl + 1;
  }
  return out;
}

const apiOf = (file: string): TypedApi | null => (file.includes('-messages-') ? MESSAGES_API : file.includes('-responses-') ? RESPONSES_API : null);

test('every event of every Messages and Responses stream: the scan agrees with the full parse and answers the token events', () => {
  const files = readdirSync(FIXTURES).filter((f) => f.endsWith('.sse') && apiOf(f) !== null);
  assert.ok(files.length >= 6, `typed fixtures: ${files.join(', ')}`);
  let tokens = 0;
  let tokensAnswered = 0;
  for (const file of files) {
    const api = apiOf(file)!;
    const bytes = fixture(file);
    for (const [s, e] of payloads(bytes)) {
      const answered = agree(api, bytes, s, e);
      const f = full(api, bytes, s, e);
      if (f !== 'invalid' && f.token) {
        tokens++;
        if (answered) tokensAnswered++;
      }
      // Usage and errors are the full parse's: the scan never answers them.
      if (f !== 'invalid' && (f.error || f.promptTokens >= 0 || f.completionTokens >= 0)) assert.equal(answered, false, `${file}: ${bytes.toString('utf8', s, e)}`);
    }
  }
  assert.ok(tokens >= 30, `token events: ${tokens}`);
  assert.equal(tokensAnswered, tokens, 'every token event of the fixtures is answered by the scan');
});

test('the facts of the common events, per API', () => {
  const cases: [TypedApi, string, Partial<EventFacts>][] = [
    [MESSAGES_API, '{"type":"content_block_delta","delta":{"type":"text_delta","text":"Hi"},"index":0}', { token: true, visible: true }],
    [MESSAGES_API, '{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}', { token: true, visible: false }],
    [MESSAGES_API, '{"type":"content_block_delta","delta":{"type":"input_json_delta","partial_json":"{\\"a"},"index":2}', { token: true, visible: true, tool: true }],
    [MESSAGES_API, '{"type":"content_block_delta","delta":{"type":"signature_delta","signature":"abc"},"index":0}', {}],
    [MESSAGES_API, '{"type":"content_block_delta","delta":{"type":"text_delta","text":""},"index":0}', {}],
    [MESSAGES_API, '{"type":"content_block_start","content_block":{"type":"text","text":"x"},"index":0}', {}],
    [MESSAGES_API, '{"type":"ping"}', {}],
    [MESSAGES_API, '{"type":"message_stop"}', { terminal: true }],
    [MESSAGES_API, '{"type":"message_start","message":{"id":"m","usage":{"input_tokens":10,"cache_read_input_tokens":4,"cache_creation_input_tokens":2,"output_tokens":1}}}', { promptTokens: 16, cachedTokens: 4 }],
    [MESSAGES_API, '{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9}}', { completionTokens: 9 }],
    [MESSAGES_API, '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}', { error: true }],
    [RESPONSES_API, '{"content_index":0,"delta":"Hi","item_id":"m","logprobs":[],"output_index":0,"sequence_number":4,"type":"response.output_text.delta"}', { token: true, visible: true }],
    [RESPONSES_API, '{"content_index":0,"delta":"hm","item_id":"r","output_index":0,"sequence_number":4,"type":"response.reasoning_text.delta"}', { token: true }],
    [RESPONSES_API, '{"type":"response.reasoning_summary_text.delta","delta":"s","item_id":"r","output_index":0,"summary_index":0,"sequence_number":4}', { token: true }],
    [RESPONSES_API, '{"delta":"{\\"a","item_id":"f","output_index":0,"sequence_number":4,"type":"response.function_call_arguments.delta"}', { token: true, visible: true, tool: true }],
    [RESPONSES_API, '{"delta":"","item_id":"m","sequence_number":4,"type":"response.output_text.delta"}', {}],
    [RESPONSES_API, '{"response":{"usage":{"input_tokens":8,"input_tokens_details":{"cached_tokens":3},"output_tokens":5,"output_tokens_details":{"reasoning_tokens":2},"total_tokens":13}},"sequence_number":9,"type":"response.completed"}', { promptTokens: 8, completionTokens: 5, cachedTokens: 3, reasoningTokens: 2, terminal: true }],
    [RESPONSES_API, '{"response":{"status":"incomplete","usage":{"input_tokens":8,"output_tokens":5}},"type":"response.incomplete"}', { promptTokens: 8, completionTokens: 5, terminal: true }],
    [RESPONSES_API, '{"response":{"status":"failed","error":{"code":"server_error"},"usage":null},"type":"response.failed"}', { error: true, terminal: true }],
    [RESPONSES_API, '{"code":"server_error","message":"boom","param":null,"sequence_number":3,"type":"error"}', { error: true }],
    [RESPONSES_API, '{"response":{"usage":null},"sequence_number":0,"type":"response.created"}', {}],
  ];
  for (const [api, text, want] of cases) {
    const f = full(api, Buffer.from(text), 0, Buffer.byteLength(text));
    assert.deepEqual(f, { ...emptyFacts(), ...want }, text);
    const answered = agree(api, Buffer.from(text));
    const decisive = want.error === true || want.promptTokens !== undefined || want.completionTokens !== undefined;
    assert.equal(answered, !decisive, `${text}: the scan ${answered ? 'answered' : 'declined'}`);
  }
});

test('events the scan must leave to the full parse', () => {
  const refused: [TypedApi, string][] = [
    [MESSAGES_API, '{"type":"content_block\\u005fdelta","delta":{"type":"text_delta","text":"x"}}'],
    [MESSAGES_API, '{"t\\u0079pe":"content_block_delta","delta":{"type":"text_delta","text":"x"}}'],
    [MESSAGES_API, '{"type":"content_block_delta","delta":{"type":"text_delta","text":"x"},"delta":{"type":"text_delta","text":""}}'],
    [MESSAGES_API, '{"type":"content_block_delta","type":"ping"}'],
    [MESSAGES_API, '{"type":"content_block_delta","delta":{"type":"text_delta","text":"x","text":""}}'],
    [RESPONSES_API, '{"delta":"x","type":"response.output_text.delta","sequence_number":1,}'],
    [RESPONSES_API, '{"delta":"x","type":7}'],
    [RESPONSES_API, '{"delta":"x"}'],
  ];
  for (const [api, text] of refused) assert.equal(agree(api, Buffer.from(text)), false, text);
});

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

test('20,000 random typed events, valid and broken: whenever the scan answers, it agrees', () => {
  const rand = rng(24);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const strings = ['', 'x', ' tok', 'é', 'a\\"b', '\\n', '\\u00e9', 'text_delta', 'thinking_delta', 'input_json_delta', 'response.output_text.delta'];
  const scalar = (): string => pick([() => 'null', () => 'true', () => '0', () => '-1.5e3', () => `"${pick(strings)}"`, () => '[]', () => '{}', () => '[1,{"a":"b"}]'])();
  const sp = () => pick(['', '', '', ' ', '\n']);
  const obj = (members: [string, string][]) => `{${sp()}${members.map(([k, v]) => `"${k}"${sp()}:${sp()}${v}`).join(`,${sp()}`)}${sp()}}`;
  const types = [...MESSAGES_API.tokens.keys(), ...MESSAGES_API.usage.keys(), ...RESPONSES_API.tokens.keys(), ...RESPONSES_API.usage.keys(), 'error', 'ping', 'content_block_start', 'response.created'];
  const delta = () => (rand() < 0.4 ? `"${pick(strings)}"` : rand() < 0.1 ? scalar() : obj(Array.from({ length: Math.floor(rand() * 4) }, () => {
    const k = pick(['type', 'text', 'thinking', 'partial_json', 'signature', 'stop_reason']);
    return [k, rand() < 0.2 ? scalar() : `"${pick(strings)}"`] as [string, string];
  })));
  const usage = () => obj(Array.from({ length: Math.floor(rand() * 4) }, () => [pick(['input_tokens', 'output_tokens', 'cache_read_input_tokens', 'input_tokens_details']), pick(['3', '0', 'null', '{"cached_tokens":2}'])] as [string, string]));
  const event = () => obj(Array.from({ length: 1 + Math.floor(rand() * 5) }, () => {
    const k = pick(['type', 'type', 'delta', 'delta', 'index', 'usage', 'message', 'response', 'sequence_number', 'error']);
    if (k === 'type') return [k, rand() < 0.9 ? `"${pick(types)}"` : scalar()] as [string, string];
    if (k === 'delta') return [k, delta()] as [string, string];
    if (k === 'usage') return [k, usage()] as [string, string];
    if (k === 'message' || k === 'response') return [k, obj([['usage', usage()]])] as [string, string];
    return [k, scalar()] as [string, string];
  }));
  const mutate = (s: string): string => {
    const i = Math.floor(rand() * (s.length + 1));
    return pick([() => s.slice(0, i), () => s.slice(0, i) + pick(['"', '{', ']', ',', '\\', ':', 'x', '\u0001']) + s.slice(i), () => s.slice(0, i) + s.slice(i + 1)])();
  };
  let answered = 0;
  let valid = 0;
  let tokens = 0;
  for (let i = 0; i < 20_000; i++) {
    const api = rand() < 0.5 ? MESSAGES_API : RESPONSES_API;
    const text = rand() < 0.25 ? mutate(event()) : event();
    const buf = Buffer.from(`data: ${text}\n\n{"more":1}`);
    const s = 6;
    const e = s + Buffer.byteLength(text);
    const f = full(api, buf, s, e);
    if (f !== 'invalid') valid++;
    if (agree(api, buf, s, e)) {
      answered++;
      if (f !== 'invalid' && f.token) tokens++;
    }
  }
  assert.ok(valid > 10_000 && answered > 3_000 && tokens > 50, `valid ${valid}, answered ${answered}, token events answered ${tokens}`);
});

test('templates: a typed event that differs from a scanned token event only inside its token string says the same, or is refused', () => {
  const rand = rng(11);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const shapes: [TypedApi, (t: string) => string][] = [
    [MESSAGES_API, (t) => `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"${t}"}}`],
    [MESSAGES_API, (t) => `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"${t}"}}`],
    [MESSAGES_API, (t) => `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"${t}"}}`],
    [RESPONSES_API, (t) => `{"content_index":0,"delta":"${t}","item_id":"msg_1","logprobs":[],"output_index":0,"sequence_number":7,"type":"response.output_text.delta"}`],
    [RESPONSES_API, (t) => `{"delta":"${t}","item_id":"rs_1","output_index":0,"sequence_number":7,"type":"response.reasoning_text.delta"}`],
  ];
  const pieces = ['a', ' tok', 'é', '\\"', '\\\\', '\\n', '\\u00e9', '"', '\\', '\\u00', '\u0001', '\\x', '"}}', ''];
  let accepted = 0;
  for (let i = 0; i < 20_000; i++) {
    const [api, shape] = pick(shapes);
    const tpl = Buffer.from(shape(' first'));
    const scanned = SCANNERS.get(api)!.scan(tpl, 0, tpl.length);
    assert.ok(scanned !== null && scanned.tokenStart >= 0, `a one-token event is a template: ${tpl}`);
    const facts = { ...scanned.facts };
    const vs = scanned.tokenStart;
    const ve = scanned.tokenEnd;
    let text = shape(Array.from({ length: Math.floor(rand() * 4) }, () => pick(pieces)).join(''));
    if (rand() < 0.1) text = text.replace('":0', '":3'); // a change outside the token
    if (rand() < 0.05) text = text.slice(0, -1);
    const buf = Buffer.from(`data: ${text}\n\n`);
    const s = 6;
    const e = s + Buffer.byteLength(text);
    if (!matchTemplate(buf, s, e, tpl, vs, ve)) continue;
    accepted++;
    const want = full(api, buf, s, e);
    assert.notEqual(want, 'invalid', `template accepted invalid JSON: ${text}`);
    assert.deepEqual(want, facts, text);
  }
  assert.ok(accepted > 3000, `accepted ${accepted}`);
});
