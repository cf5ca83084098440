/**
 * The simulator with --enable-prompt-tokens-details and --reasoning-tokens-details, behind the
 * proxy, driven by the real openai client: infermeter's cached_input and reasoning counters equal
 * the sums of the usage fields the client received, streamed (final usage, and usage in every
 * chunk as vLLM's continuous_usage_stats sends it) and not streamed.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startSimulator, type Simulator } from '../../src/sim/index.js';
import { startProxy, sumSamples, waitForMetrics, type TestProxy } from '../helpers.js';

let sim: Simulator;
let proxy: TestProxy;
before(async () => {
  sim = await startSimulator({ listen: '127.0.0.1:0', speed: 'max', models: 'sim-a', reasoning: 'reasoning_content', promptTokensDetails: 'true', reasoningTokensDetails: 'true', outputTokens: '20-40' });
  proxy = await startProxy({ upstream: sim.url });
});
after(async () => {
  await proxy.close();
  await sim.close();
});

type Usage = OpenAI.CompletionUsage & { prompt_tokens_details?: { cached_tokens?: number } | null; completion_tokens_details?: { reasoning_tokens?: number } | null };

test('cached and reasoning token counters equal the sums of the simulator\'s usage fields', async () => {
  const client = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  // A long shared prefix: from the second request on, the prefix cache serves most of the prompt.
  const prefix = 'You are a careful assistant. Answer briefly and cite nothing. '.repeat(20);
  let cached = 0;
  let reasoning = 0;
  for (let i = 0; i < 9; i++) {
    const messages = [{ role: 'user' as const, content: `${prefix} Question ${i}?` }];
    let usage: Usage | undefined;
    if (i % 3 === 2) {
      const res = await client.chat.completions.create({ model: 'sim-a', messages, max_tokens: 30 });
      usage = res.usage as Usage;
    } else {
      const continuous = i % 3 === 1;
      const stream = await client.chat.completions.create({
        model: 'sim-a', messages, max_tokens: 30, stream: true,
        stream_options: { include_usage: true, ...(continuous ? { continuous_usage_stats: true } : {}) } as OpenAI.ChatCompletionStreamOptions,
      });
      for await (const chunk of stream) if (chunk.usage && chunk.choices.length === 0) usage = chunk.usage as Usage;
    }
    assert.ok(usage?.prompt_tokens_details && usage.completion_tokens_details, `request ${i} reported both details`);
    cached += usage.prompt_tokens_details.cached_tokens ?? 0;
    reasoning += usage.completion_tokens_details.reasoning_tokens ?? 0;
  }
  assert.ok(cached > 0 && reasoning > 0, `the simulator reported cached ${cached} and reasoning ${reasoning} tokens`);
  const s = await waitForMetrics(proxy.metricsUrl, (x) => sumSamples(x, 'infermeter_requests_total') === 9);
  assert.equal(sumSamples(s, 'infermeter_tokens_total', { gen_ai_token_type: 'cached_input' }), cached);
  assert.equal(sumSamples(s, 'infermeter_tokens_total', { gen_ai_token_type: 'reasoning' }), reasoning);
  assert.equal(sumSamples(s, 'infermeter_metering_failures_total'), 0);
});
