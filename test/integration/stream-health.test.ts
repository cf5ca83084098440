/**
 * Every stream's ending named, through the real proxy and the fake upstream: the four APIs'
 * real captured streams (llama-server's) whole and without their terminal event, an upstream
 * error mid-stream, a reset, a client that leaves, a stall that --idle-timeout cuts (silent in
 * infermeter_streams_silent meanwhile), and a tool call held back 5 s: a 5 s tool_call silence.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.js';
import { FIXTURES, rawPost, startProxy, streamUntilThenAbort, sumSamples, waitForMetrics, type TestProxy } from '../helpers.js';

let upstream: FakeUpstream;
let proxy: TestProxy;
before(async () => {
  upstream = await startFakeUpstream();
  proxy = await startProxy({ upstream: upstream.url });
});
after(async () => {
  await proxy.close();
  await upstream.close();
});

/** Each API's captured stream, its path, its api label, a request body (asking for the usage the capture has), and the SSE event that ends it. */
const APIS = [
  { api: 'chat_completions', path: '/v1/chat/completions', fixture: 'llama-server-chat-stream.sse', body: { messages: [{ role: 'user', content: 'hi' }], stream_options: { include_usage: true } }, terminal: 'data: [DONE]' },
  { api: 'completions', path: '/v1/completions', fixture: 'llama-server-completions-stream.sse', body: { prompt: 'hi', stream_options: { include_usage: true } }, terminal: 'data: [DONE]' },
  { api: 'messages', path: '/v1/messages', fixture: 'llama-server-messages-stream.sse', body: { max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }, terminal: 'event: message_stop' },
  { api: 'responses', path: '/v1/responses', fixture: 'llama-server-responses-stream.sse', body: { input: 'hi' }, terminal: 'event: response.completed' },
] as const;

/** The stream without its terminal event: the event's lines (and the `data:` after an `event:`) left out. */
function withoutTerminal(sse: string, terminal: string): string {
  const events = sse.split(/\n\n/);
  const kept = events.filter((e) => !e.split('\n').some((line) => line === terminal || line.startsWith(`${terminal} `)) && !e.startsWith(terminal));
  assert.equal(kept.length, events.length - 1, `exactly one ${terminal} event`);
  return kept.join('\n\n');
}

const endings = async (m: TestProxy, expected: number) => waitForMetrics(m.metricsUrl, (x) => sumSamples(x, 'infermeter_stream_endings_total') === expected, 15_000);

test('each API, whole and without its terminal event: complete and no_terminal_event, exactly, the bytes unchanged', async () => {
  for (const a of APIS) {
    const sse = readFileSync(`${FIXTURES}${a.fixture}`, 'utf8');
    for (const text of [sse, withoutTerminal(sse, a.terminal)]) {
      const res = await rawPost(`${proxy.url}${a.path}`, { model: 'fake-model', stream: true, ...a.body, fake: { raw: { b64: Buffer.from(text).toString('base64'), splits: [Math.floor(text.length / 2)], delayMs: 5 } } });
      assert.equal(res.status, 200);
      assert.equal(res.body.toString(), text, `${a.api}: the bytes the upstream sent`);
    }
  }
  const s = await endings(proxy, 8);
  for (const a of APIS) {
    assert.equal(sumSamples(s, 'infermeter_stream_endings_total', { api: a.api, ending: 'complete' }), 1, `${a.api} complete`);
    assert.equal(sumSamples(s, 'infermeter_stream_endings_total', { api: a.api, ending: 'no_terminal_event' }), 1, `${a.api} no_terminal_event`);
  }
  // Each stream had a first token: one before_first_token silence per stream, eight in all.
  assert.equal(sumSamples(s, 'infermeter_longest_silence_seconds_count', { phase: 'before_first_token' }), 8);
});

test('an error event and a reset mid-stream: upstream_error; a client that leaves: client_abort', async () => {
  const before = sumSamples((await waitForMetrics(proxy.metricsUrl, () => true)), 'infermeter_stream_endings_total');
  for (const kind of ['error', 'reset'] as const) {
    await rawPost(`${proxy.url}/v1/chat/completions`, { model: 'fake-model', stream: true, fake: { schedule: { firstMs: 5, chunks: 20, gapMs: 5 }, fault: { afterChunks: 3, kind } } }).catch(() => undefined);
  }
  await streamUntilThenAbort(proxy.url, { model: 'fake-model', stream: true, fake: { schedule: { firstMs: 5, chunks: 1000, gapMs: 10, relativeGaps: true } } }, 'tok2');
  const s = await endings(proxy, before + 3);
  assert.equal(sumSamples(s, 'infermeter_stream_endings_total', { api: 'chat_completions', ending: 'upstream_error' }), 2);
  assert.equal(sumSamples(s, 'infermeter_stream_endings_total', { api: 'chat_completions', ending: 'client_abort' }), 1);
});

test('a tool call the upstream holds back 5 s: a 5 s tool_call silence, the content before it quick', { timeout: 30_000 }, async () => {
  const chunk = (delta: unknown, finish: string | null = null) => `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'fake-model', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  const head = chunk({ role: 'assistant', content: '' }) + chunk({ content: 'Let me' }) + chunk({ content: ' check.' });
  const tail = chunk({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] }) + chunk({}, 'tool_calls') + 'data: [DONE]\n\n';
  const before = await waitForMetrics(proxy.metricsUrl, () => true);
  const count = (x: typeof before, phase: string) => sumSamples(x, 'infermeter_longest_silence_seconds_count', { phase });
  const sum = (x: typeof before, phase: string) => sumSamples(x, 'infermeter_longest_silence_seconds_sum', { phase });
  const res = await rawPost(`${proxy.url}/v1/chat/completions`, { model: 'fake-model', stream: true, fake: { raw: { b64: Buffer.from(head + tail).toString('base64'), splits: [head.length], delayMs: 5000 } } });
  assert.equal(res.body.toString(), head + tail);
  const s = await waitForMetrics(proxy.metricsUrl, (x) => count(x, 'tool_call') === count(before, 'tool_call') + 1, 10_000);
  const tool = sum(s, 'tool_call') - sum(before, 'tool_call');
  assert.ok(tool >= 4.95 && tool < 6, `tool_call silence ${tool} s`);
  // The content tokens came in the first write: their wait is the same read's, near nothing.
  assert.equal(count(s, 'content') - count(before, 'content'), 1);
  assert.ok(sum(s, 'content') - sum(before, 'content') < 0.5);
  assert.equal(sumSamples(s, 'infermeter_stream_endings_total', { ending: 'complete' }) - sumSamples(before, 'infermeter_stream_endings_total', { ending: 'complete' }), 1);
});

test('a stream that hangs: silent in infermeter_streams_silent past --stall-after, then cut at --idle-timeout and counted stalled', { timeout: 30_000 }, async () => {
  const p = await startProxy({ upstream: upstream.url, idleTimeout: '3s', stallAfter: '0.5s' });
  try {
    const silent = (x: Awaited<ReturnType<typeof waitForMetrics>>) => sumSamples(x, 'infermeter_streams_silent', { gen_ai_request_model: 'fake-model' });
    const pending = rawPost(`${p.url}/v1/chat/completions`, { model: 'fake-model', stream: true, fake: { schedule: { firstMs: 5, chunks: 20, gapMs: 5 }, fault: { afterChunks: 2, kind: 'hang' } } }).catch(() => undefined);
    await waitForMetrics(p.metricsUrl, (x) => silent(x) === 1, 3000);
    await pending;
    const s = await endings(p, 1);
    assert.equal(sumSamples(s, 'infermeter_stream_endings_total', { api: 'chat_completions', ending: 'stalled' }), 1);
    assert.equal(sumSamples(s, 'infermeter_requests_total', { outcome: 'upstream_timeout' }), 1);
    await waitForMetrics(p.metricsUrl, (x) => silent(x) === 0, 3000);
  } finally {
    await p.close();
  }
});
