/**
 * Latency per API, through the real proxy: eight chat, eight Anthropic Messages and eight OpenAI
 * Responses streams at once, each API on its own schedule (first token, and every gap after it,
 * D ms apart: chat 40, Responses 190, Messages 340). Messages and Responses are `chat`
 * operations, so only the `api` label keeps them apart: each API's TTFT, TTFO, TPOT, E2E and
 * inter-chunk series at /metrics must hold its own eight streams and read its own schedule, and
 * /api/v1/status must give one row per API with the same figures.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { rawPost, startProxy, sumSamples, waitForMetrics, type TestProxy } from '../helpers.js';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.js';
import { metricsBase, statusValidator, statusWhen } from './ui-helpers.js';
import type { Sample } from '../../src/lib/prom-text.js';

const STREAMS = 8;
const TOKENS = 3;
/** Each API's first-token delay, which is also its gap between tokens. */
const DELAY_MS = { chat_completions: 40, responses: 190, messages: 340 } as const;
type Api = keyof typeof DELAY_MS;
/**
 * How late a mean may read on a busy machine (24 streams start at once on the test's own loop,
 * beside the proxy's): less than the 150 ms between two schedules.
 */
const SLACK_S = 0.12;

const env = {} as { upstream: FakeUpstream; proxy: TestProxy };

before(async () => {
  env.upstream = await startFakeUpstream();
  // The process's first streams of each API pay for loading and compiling their path: not what is timed here.
  env.proxy = await startProxy({ upstream: env.upstream.url });
  for (const api of Object.keys(DELAY_MS) as Api[]) await send(api);
  await env.proxy.close();
  env.proxy = await startProxy({ upstream: env.upstream.url });
});
after(async () => {
  await env.proxy.close();
  await env.upstream.close();
});

const sse = (type: string, doc: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...doc })}\n\n`;

/** A stream in TOKENS + 1 writes, D ms apart: the preamble, then one token each (the last with the closing events). */
function typedStream(api: 'messages' | 'responses'): string[] {
  const token = (i: number) => api === 'messages'
    ? sse('content_block_delta', { index: 0, delta: { type: 'text_delta', text: `tok${i} ` } })
    : sse('response.output_text.delta', { item_id: 'msg_1', output_index: 0, content_index: 0, delta: `tok${i} ` });
  const preamble = api === 'messages'
    ? sse('message_start', { message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'fake-model', content: [], stop_reason: null, usage: { input_tokens: 7, output_tokens: 1 } } })
      + sse('content_block_start', { index: 0, content_block: { type: 'text', text: '' } })
    : sse('response.created', { response: { id: 'resp_1', status: 'in_progress' } });
  const closing = api === 'messages'
    ? sse('content_block_stop', { index: 0 }) + sse('message_delta', { delta: { stop_reason: 'end_turn' }, usage: { output_tokens: TOKENS } }) + sse('message_stop', {})
    : sse('response.completed', { response: { id: 'resp_1', status: 'completed', usage: { input_tokens: 7, output_tokens: TOKENS, total_tokens: 7 + TOKENS } } });
  const writes = [preamble];
  for (let i = 0; i < TOKENS; i++) writes.push(token(i) + (i === TOKENS - 1 ? closing : ''));
  return writes;
}

async function send(api: Api): Promise<void> {
  const d = DELAY_MS[api];
  if (api === 'chat_completions') {
    const res = await rawPost(`${env.proxy.url}/v1/chat/completions`, { model: 'fake-model', stream: true, messages: [{ role: 'user', content: 'hi' }], fake: { schedule: { firstMs: d, chunks: TOKENS, gapMs: d } } });
    assert.equal(res.status, 200);
    return;
  }
  const writes = typedStream(api);
  const bytes = Buffer.from(writes.join(''));
  const splits: number[] = [];
  let at = 0;
  for (const w of writes.slice(0, -1)) splits.push((at += Buffer.byteLength(w)));
  const body = api === 'messages'
    ? { model: 'fake-model', stream: true, max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }
    : { model: 'fake-model', stream: true, input: 'hi' };
  const res = await rawPost(`${env.proxy.url}/v1/${api}`, { ...body, fake: { raw: { b64: bytes.toString('base64'), splits, delayMs: d } } });
  assert.equal(res.status, 200);
  assert.ok(res.body.equals(bytes), `${api}: the client gets the stream unchanged`);
}

function mean(samples: Sample[], metric: string, api: Api): number {
  return sumSamples(samples, `${metric}_sum`, { api }) / sumSamples(samples, `${metric}_count`, { api });
}

test('eight chat, eight Messages and eight Responses streams at once: each API\'s latency series and status row read its own schedule', { timeout: 60_000 }, async () => {
  const apis = Object.keys(DELAY_MS) as Api[];
  await Promise.all(apis.flatMap((api) => Array.from({ length: STREAMS }, () => send(api))));
  const samples = await waitForMetrics(env.proxy.metricsUrl, (s) => sumSamples(s, 'infermeter_requests_total', { outcome: 'ok' }) === 3 * STREAMS);

  // All three are `chat` operations: without api they would share one series.
  assert.equal(sumSamples(samples, 'gen_ai_server_time_to_first_token_seconds_count', { gen_ai_operation_name: 'chat' }), 3 * STREAMS);
  const ttftApis = new Set(samples.filter((s) => s.name === 'gen_ai_server_time_to_first_token_seconds_count').map((s) => s.labels['api']));
  assert.deepEqual([...ttftApis].sort(), ['chat_completions', 'messages', 'responses']);

  const figures: string[] = [];
  const means = new Map<Api, number[]>();
  for (const api of apis) {
    const d = DELAY_MS[api] / 1000;
    for (const metric of ['gen_ai_server_time_to_first_token_seconds', 'infermeter_time_to_first_output_seconds', 'gen_ai_server_time_per_output_token_seconds', 'gen_ai_server_request_duration_seconds']) {
      assert.equal(sumSamples(samples, `${metric}_count`, { api }), STREAMS, `${metric}{api="${api}"} holds its ${STREAMS} streams`);
    }
    assert.equal(sumSamples(samples, 'infermeter_inter_chunk_latency_seconds_count', { api }), STREAMS * (TOKENS - 1));
    const ttft = mean(samples, 'gen_ai_server_time_to_first_token_seconds', api);
    const ttfo = mean(samples, 'infermeter_time_to_first_output_seconds', api);
    const tpot = mean(samples, 'gen_ai_server_time_per_output_token_seconds', api);
    const gap = mean(samples, 'infermeter_inter_chunk_latency_seconds', api);
    const e2e = mean(samples, 'gen_ai_server_request_duration_seconds', api);
    figures.push(`${api} TTFT ${(ttft * 1000).toFixed(1)} ms, TPOT ${(tpot * 1000).toFixed(1)} ms, E2E ${(e2e * 1000).toFixed(1)} ms (schedule ${DELAY_MS[api]} ms)`);
    // Nothing reaches the proxy before the upstream's schedule says (TTFT, TTFO, E2E: at most late);
    // a late first token shortens the next gap (the schedules are absolute), so gaps and TPOT may read early too.
    const within = (name: string, v: number, expected: number, early = 0.003) => assert.ok(v >= expected - early && v <= expected + SLACK_S, `${api} mean ${name} ${v.toFixed(4)} s, expected ${expected} s (-${early} s, +${SLACK_S} s)`);
    // Each token D after the last: the gaps read D. The chat schedule ends with its last token
    // (TOKENS × D); a raw replay holds the body open one more D before it ends.
    const end = (api === 'chat_completions' ? TOKENS : TOKENS + 1) * d;
    within('TTFT', ttft, d);
    within('TTFO', ttfo, d);
    within('inter-chunk gap', gap, d, SLACK_S);
    within('E2E', e2e, end);
    within('TPOT', tpot, (end - d) / (TOKENS - 1), SLACK_S);
    means.set(api, [ttft, ttfo, tpot, gap, e2e]);
  }
  console.log(`per API at /metrics: ${figures.join('; ')}`);
  // And they differ as the schedules do: chat < Responses < Messages on every latency.
  means.get('chat_completions')!.forEach((v, i) => assert.ok(v < means.get('responses')![i]! && means.get('responses')![i]! < means.get('messages')![i]!, `latency ${i}: ${apis.map((a) => means.get(a)![i]).join(' < ')}`));

  // The page's JSON: one row per API, every model together, with the same schedules.
  const doc = await statusWhen(metricsBase(env.proxy.metricsUrl), (d) => d.apis?.length === 3 && d.apis.every((a) => a.ttft.count === STREAMS));
  const validate = statusValidator();
  assert.ok(validate(doc), JSON.stringify(validate.errors));
  assert.deepEqual(doc.apis.map((a) => a.api), ['chat_completions', 'messages', 'responses']);
  for (const row of doc.apis) {
    const d = DELAY_MS[row.api as Api] / 1000;
    assert.ok(row.ttft.mean! >= d - 0.003 && row.ttft.mean! <= d + SLACK_S, `${row.api} status TTFT mean ${row.ttft.mean}`);
    assert.ok(row.ttft.p99! >= d - 0.003 && row.ttft.p99! <= d + SLACK_S + 0.05, `${row.api} status TTFT p99 ${row.ttft.p99}`);
    assert.equal(row.e2e.count, STREAMS);
    assert.deepEqual(row.outcomes5m, { ok: STREAMS });
  }
  assert.equal(doc.models.find((m) => m.model === 'fake-model')!.ttft.count, 3 * STREAMS, 'the model row still holds every API');
});
