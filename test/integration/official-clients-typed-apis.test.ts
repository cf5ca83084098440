/**
 * The official clients on the two typed APIs, through infermeter over the simulator (runs
 * anywhere; the real-engine twin is llama-messages-responses.test.ts): `@anthropic-ai/sdk`
 * messages.create and `openai` responses.create, streamed and not, tool calls and reasoning
 * included. Each request lands under its model label and route with the usage the client saw,
 * a TTFT per stream and none without one; a background request is counted with no E2E; token
 * counting is its own non-generation route; the tenant comes from x-api-key.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { startSimulator, type Simulator } from '../../src/sim/index.js';
import { rawPost, startProxy, sumSamples, waitForMetrics, type TestProxy } from '../helpers.js';

const SALT = 'typed-apis-test-salt';
/** README's tenant label for an API key, computed independently: key- and 12 hex of HMAC-SHA256(salt, key). */
const tenantOf = (key: string) => 'key-' + createHmac('sha256', SALT).update(key).digest('hex').slice(0, 12);

let sim: Simulator;
let proxy: TestProxy;
let sent = 0;
before(async () => {
  sim = await startSimulator({ listen: '127.0.0.1:0', speed: 'max', models: 'sim-a', reasoning: 'reasoning', outputTokens: '12-16' });
  proxy = await startProxy({ upstream: sim.url, tenantFrom: 'api-key', tenantSalt: SALT });
});
after(async () => {
  // A failed start must not leave the simulator holding the test file open.
  await proxy?.close();
  await sim?.close();
});

async function settled() {
  return waitForMetrics(proxy.metricsUrl, (s) => sumSamples(s, 'infermeter_requests_total') === sent);
}

test('Anthropic client: messages.create streamed and not, with a tool; tokens equal the usage it saw; tenant from x-api-key', async () => {
  const client = new Anthropic({ baseURL: proxy.url, apiKey: 'sk-ant-test-key', maxRetries: 0 });
  const stream = await client.messages.create({ model: 'sim-a', max_tokens: 64, stream: true, messages: [{ role: 'user', content: 'hello' }] });
  let input = 0;
  let output = 0;
  for await (const e of stream) {
    if (e.type === 'message_start') input += e.message.usage.input_tokens;
    if (e.type === 'message_delta') output += e.usage.output_tokens;
  }
  const plain = await client.messages.create({
    model: 'sim-a', max_tokens: 64, messages: [{ role: 'user', content: 'weather?' }],
    tools: [{ name: 'get_weather', input_schema: { type: 'object', properties: {} } }],
  });
  assert.equal(plain.content.at(-1)!.type, 'tool_use');
  input += plain.usage.input_tokens;
  output += plain.usage.output_tokens;
  sent += 2;
  const s = await settled();
  assert.equal(sumSamples(s, 'infermeter_requests_total', { route: 'messages', gen_ai_request_model: 'sim-a', outcome: 'ok' }), 2);
  assert.equal(sumSamples(s, 'infermeter_tokens_total', { gen_ai_token_type: 'output' }), output);
  assert.equal(sumSamples(s, 'infermeter_tokens_total', { gen_ai_token_type: 'input' }), input);
  assert.equal(sumSamples(s, 'gen_ai_server_time_to_first_token_seconds_count'), 1, 'the stream has a TTFT, the body none');
  assert.equal(sumSamples(s, 'infermeter_time_to_first_output_seconds_count'), 1);
  const tenants = s.filter((x) => x.name === 'infermeter_requests_total' && x.labels['route'] === 'messages').map((x) => x.labels['tenant']);
  assert.ok(tenants.length > 0 && tenants.every((t) => t === tenantOf('sk-ant-test-key')), `tenant from x-api-key: ${tenants.join(',')}`);
});

test('OpenAI client: responses.create streamed and not; tokens (reasoning included) equal the usage it saw', async () => {
  const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'none', maxRetries: 0 });
  const before = await settled();
  const stream = await client.responses.create({ model: 'sim-a', input: 'hello there', stream: true });
  let output = 0;
  let input = 0;
  for await (const e of stream) {
    if (e.type === 'response.completed') {
      output += e.response.usage!.output_tokens;
      input += e.response.usage!.input_tokens;
    }
  }
  const plain = await client.responses.create({ model: 'sim-a', input: 'and again' });
  output += plain.usage!.output_tokens;
  input += plain.usage!.input_tokens;
  sent += 2;
  const s = await settled();
  const d = (name: string, m: Record<string, string> = {}) => sumSamples(s, name, m) - sumSamples(before, name, m);
  assert.equal(d('infermeter_requests_total', { route: 'responses', gen_ai_request_model: 'sim-a', outcome: 'ok', gen_ai_operation_name: 'chat' }), 2);
  assert.equal(d('infermeter_tokens_total', { gen_ai_token_type: 'output' }), output);
  assert.equal(d('infermeter_tokens_total', { gen_ai_token_type: 'input' }), input);
  assert.equal(d('gen_ai_server_time_to_first_token_seconds_count'), 1);
  // Reasoning comes first: the first visible output is later than the first token.
  const ttft = d('gen_ai_server_time_to_first_token_seconds_sum');
  const ttfo = d('infermeter_time_to_first_output_seconds_sum');
  assert.ok(ttfo >= ttft, `TTFO ${ttfo} >= TTFT ${ttft}`);
});

test('background: true is counted with no E2E and no tokens; count_tokens and input_tokens are their own routes', async () => {
  const before = await settled();
  const bg = await rawPost(`${proxy.url}/v1/responses`, { model: 'sim-a', input: 'later', background: true });
  assert.equal(JSON.parse(bg.body.toString()).status, 'queued');
  await rawPost(`${proxy.url}/v1/messages/count_tokens`, { model: 'sim-a', messages: [{ role: 'user', content: 'hi' }] });
  await rawPost(`${proxy.url}/v1/responses/input_tokens`, { model: 'sim-a', input: 'hi' });
  sent += 3;
  const s = await settled();
  const d = (name: string, m: Record<string, string> = {}) => sumSamples(s, name, m) - sumSamples(before, name, m);
  assert.equal(d('infermeter_requests_total', { route: 'responses', outcome: 'ok' }), 1);
  assert.equal(d('gen_ai_server_request_duration_seconds_count'), 0, 'a queued answer is no generation time');
  assert.equal(d('infermeter_tokens_total', { gen_ai_token_type: 'output' }), 0);
  assert.equal(d('infermeter_requests_total', { route: 'messages_count_tokens', gen_ai_request_model: 'sim-a' }), 1, 'the body names the model');
  assert.equal(d('infermeter_requests_total', { route: 'responses_input_tokens', gen_ai_request_model: 'sim-a' }), 1, 'the body names the model');
});
