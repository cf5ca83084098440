// test-group: alone (the client-minus-infermeter TTFT median is held to a few ms)
/**
 * Real engine, the two other generation APIs: llama-server through infermeter, driven by the
 * official clients (`@anthropic-ai/sdk` messages.create, `openai` responses.create), streamed
 * and not. Per API: every request is counted under the served model's label on its own route;
 * output and input tokens equal what the server's own usage reported to the client; each stream
 * has one TTFT, inside the client's own stopwatch (the client's clock starts earlier and stops
 * later), with the median gap within the loopback hops the chat test allows (llama-stream-timing);
 * a non-streamed answer has tokens and E2E but no TTFT.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { loadavg } from 'node:os';
import { quantile, startLlamaServer, startMeter, sum, withLlama, type LlamaServer, type Meter } from './llama-harness.js';

const TTFT_HOPS_MS = 15;
const MAX_TOKENS = 32;
const PROMPTS = ['Tell me about the sea.', 'What is a token?', 'Count to ten, slowly, in French, please.', 'Why?', 'Describe a prefill.',
  'A longer prompt, so that the prefill has a little more to do than usual, before decoding.', 'Last one.'];

/** One request as the client saw it: its stopwatch TTFT (streams), and the usage the server reported. */
interface Seen { ttft: number | null; input: number; output: number }

interface Api {
  route: 'messages' | 'responses';
  call(prompt: string, stream: boolean): Promise<Seen>;
}

withLlama('Messages and Responses APIs through infermeter: tokens equal the server\'s usage, TTFT inside the client\'s stopwatch', (engine) => {
  let llama: LlamaServer;
  let meter: Meter;
  let sent = 0;
  const apis: Api[] = [];
  before(async () => {
    llama = await startLlamaServer(engine, { parallel: 1 });
    meter = await startMeter(llama.url);
    const anthropic = new Anthropic({ baseURL: meter.url, apiKey: 'none', maxRetries: 0 });
    const openai = new OpenAI({ baseURL: `${meter.url}/v1`, apiKey: 'none', maxRetries: 0 });
    apis.push({
      route: 'messages',
      async call(prompt, stream) {
        const messages = [{ role: 'user' as const, content: prompt }];
        if (!stream) {
          const m = await anthropic.messages.create({ model: 'tiny-llama', max_tokens: MAX_TOKENS, messages });
          return { ttft: null, input: anthropicInput(m.usage), output: m.usage.output_tokens };
        }
        const start = performance.now();
        const events = await anthropic.messages.create({ model: 'tiny-llama', max_tokens: MAX_TOKENS, messages, stream: true });
        let first = 0;
        let input = -1;
        let output = -1;
        for await (const e of events) {
          if (e.type === 'content_block_delta' && first === 0 && ((e.delta.type === 'text_delta' && e.delta.text !== '') || (e.delta.type === 'thinking_delta' && e.delta.thinking !== ''))) first = performance.now();
          if (e.type === 'message_start') input = anthropicInput(e.message.usage);
          if (e.type === 'message_delta') output = e.usage.output_tokens;
        }
        return { ttft: first - start, input, output };
      },
    });
    apis.push({
      route: 'responses',
      async call(prompt, stream) {
        if (!stream) {
          const r = await openai.responses.create({ model: 'tiny-llama', input: prompt, max_output_tokens: MAX_TOKENS });
          return { ttft: null, input: r.usage!.input_tokens, output: r.usage!.output_tokens };
        }
        const start = performance.now();
        const events = await openai.responses.create({ model: 'tiny-llama', input: prompt, max_output_tokens: MAX_TOKENS, stream: true });
        let first = 0;
        let input = -1;
        let output = -1;
        for await (const e of events) {
          if ((e.type === 'response.output_text.delta' || e.type === 'response.reasoning_text.delta') && e.delta !== '' && first === 0) first = performance.now();
          if (e.type === 'response.completed' || e.type === 'response.incomplete') {
            input = e.response.usage!.input_tokens;
            output = e.response.usage!.output_tokens;
          }
        }
        return { ttft: first - start, input, output };
      },
    });
    // The first requests pay one-time allocations in the server and each client's first stream its code loading.
    for (const api of apis) {
      for (let i = 0; i < 2; i++) {
        await api.call('warm up', true);
        sent++;
      }
    }
  });
  after(async () => {
    await meter?.close();
    await llama?.close();
  });

  for (const route of ['messages', 'responses'] as const) {
    test(`${route}: streamed and not, through the official client`, async () => {
      const api = apis.find((a) => a.route === route)!;
      const hops: number[] = [];
      const rows: string[] = [];
      const at = { route, gen_ai_request_model: 'tiny-llama' };
      for (const [i, prompt] of [...PROMPTS, 'Not streamed, please.'].entries()) {
        const stream = i < PROMPTS.length;
        const before = await meter.settled(sent);
        const seen = await api.call(prompt, stream);
        sent++;
        const after = await meter.settled(sent);
        const delta = (name: string, match: Record<string, string> = {}) => sum(after, name, match) - sum(before, name, match);
        assert.equal(delta('infermeter_requests_total', { ...at, outcome: 'ok', gen_ai_operation_name: 'chat' }), 1, 'one ok request under the served model, on its route');
        assert.ok(seen.output > 0 && seen.input > 0, 'the server reported usage');
        assert.equal(delta('infermeter_tokens_total', { gen_ai_token_type: 'output' }), seen.output, 'output tokens = the server\'s usage');
        assert.equal(delta('infermeter_tokens_total', { gen_ai_token_type: 'input' }), seen.input, 'input tokens = the server\'s usage');
        assert.equal(delta('infermeter_output_token_source_total', { source: 'usage' }), 1);
        assert.equal(delta('gen_ai_server_request_duration_seconds_count', { gen_ai_request_model: 'tiny-llama' }), 1);
        const ttftCount = delta('gen_ai_server_time_to_first_token_seconds_count', { gen_ai_request_model: 'tiny-llama' });
        if (!stream) {
          assert.equal(ttftCount, 0, 'a non-streamed answer has no TTFT');
          rows.push(`${route} not streamed: tokens in ${seen.input} out ${seen.output} (infermeter equal)`);
          continue;
        }
        assert.equal(ttftCount, 1, 'one TTFT per stream');
        const ttft = delta('gen_ai_server_time_to_first_token_seconds_sum') * 1000;
        assert.ok(seen.ttft! >= ttft, `client TTFT ${seen.ttft} >= infermeter TTFT ${ttft}`);
        hops.push(seen.ttft! - ttft);
        rows.push(`${route} stream: tokens in ${seen.input} out ${seen.output} (infermeter equal) | ttft client ${seen.ttft!.toFixed(2)} ms infermeter ${ttft.toFixed(2)} ms`);
      }
      console.log(rows.map((r) => `# ${r}`).join('\n'));
      const median = quantile(hops, 0.5);
      console.log(`# ${route}: median client - infermeter TTFT ${median.toFixed(2)} ms over ${hops.length} streams`);
      assert.ok(median <= TTFT_HOPS_MS, `median client - infermeter TTFT ${median.toFixed(2)} ms <= ${TTFT_HOPS_MS} ms (${hops.map((h) => h.toFixed(1)).join(', ')}; load average ${loadavg()[0]!.toFixed(1)})`);
    });
  }
});

function anthropicInput(u: { input_tokens: number; cache_read_input_tokens?: number | null; cache_creation_input_tokens?: number | null }): number {
  return u.input_tokens + (u.cache_read_input_tokens ?? 0) + (u.cache_creation_input_tokens ?? 0);
}
