/** The official openai npm client, streaming and not, gets the same content through the proxy as directly. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { sumSamples, waitForMetrics, proxyOverFakeUpstream } from '../helpers.js';

const env = proxyOverFakeUpstream();

const fake = { schedule: { firstMs: 5, chunks: 12, gapMs: 2, usage: 12, promptTokens: 9 } };

async function streamed(baseURL: string, includeUsage: boolean): Promise<{ text: string; chunks: number; usage: unknown }> {
  const client = new OpenAI({ baseURL: `${baseURL}/v1`, apiKey: 'sk-test-secret' });
  // The fake upstream's script rides along in the body (the client forwards unknown fields).
  const params: OpenAI.ChatCompletionCreateParamsStreaming = {
    model: 'fake-model',
    stream: true,
    messages: [{ role: 'user', content: 'hello' }],
    ...(includeUsage ? { stream_options: { include_usage: true } } : {}),
    ...{ fake },
  };
  const stream = await client.chat.completions.create(params);
  let text = '';
  let chunks = 0;
  let usage: unknown = null;
  for await (const c of stream) {
    chunks++;
    text += c.choices[0]?.delta?.content ?? '';
    if (c.usage) usage = c.usage;
  }
  return { text, chunks, usage };
}

test('streaming: identical content and chunk count, with and without include_usage', async () => {
  for (const includeUsage of [false, true]) {
    const direct = await streamed(env.upstream.url, includeUsage);
    const proxied = await streamed(env.proxy.url, includeUsage);
    assert.equal(proxied.text, direct.text);
    assert.equal(proxied.chunks, direct.chunks);
    assert.deepEqual(proxied.usage, direct.usage);
  }
  const s = await waitForMetrics(env.proxy.metricsUrl, (x) => sumSamples(x, 'infermeter_requests_total', { outcome: 'ok' }) === 2);
  assert.equal(sumSamples(s, 'infermeter_tokens_total', { gen_ai_token_type: 'output' }), 24);
  assert.equal(sumSamples(s, 'infermeter_tokens_total', { gen_ai_token_type: 'input' }), 18);
  assert.equal(sumSamples(s, 'gen_ai_server_time_to_first_token_seconds_count', { gen_ai_request_model: 'fake-model', gen_ai_operation_name: 'chat' }), 2);
});

test('non-streaming: identical response; E2E and tokens recorded, never TTFT', async () => {
  const params: OpenAI.ChatCompletionCreateParamsNonStreaming = {
    model: 'fake-model',
    messages: [{ role: 'user', content: 'hello' }],
    ...{ fake: { json: { content: 'a full answer', promptTokens: 5, completionTokens: 3 } } },
  };
  const ask = (baseURL: string) => new OpenAI({ baseURL: `${baseURL}/v1`, apiKey: 'sk-test-secret' }).chat.completions.create(params);
  const direct = await ask(env.upstream.url);
  const proxied = await ask(env.proxy.url);
  assert.deepEqual(proxied, direct);
  const s = await waitForMetrics(env.proxy.metricsUrl, (x) => sumSamples(x, 'infermeter_requests_total', { outcome: 'ok' }) === 3);
  assert.equal(sumSamples(s, 'gen_ai_server_request_duration_seconds_count'), 3);
  assert.equal(sumSamples(s, 'gen_ai_server_time_to_first_token_seconds_count'), 2, 'the non-streaming request adds no TTFT');
  assert.equal(sumSamples(s, 'gen_ai_client_token_usage_sum', { gen_ai_token_type: 'output' }), 27);
});
