// test-group: alone (infermeter's timings against llama-server's own and the client's stopwatch)
/**
 * Real engine: infermeter's per-request numbers agree with the two other witnesses of the
 * same stream — the client's stopwatch and llama-server's own `timings`.
 *
 * What is checked, and why (loopback, one request at a time, 7 requests):
 * - Tokens, every request: exact. infermeter takes output tokens from the stream's usage,
 *   which is the server's own count.
 * - Order, every request (causality, never noisy): the client's TTFT contains infermeter's
 *   (its clock starts earlier and stops later), and infermeter's contains the server's
 *   prefill `prompt_ms` (the server's interval starts after the request reached it and ends
 *   when the first token exists, before it was sent).
 * - Closeness, on the median over the requests (one request stalled by the scheduler on this
 *   shared 2-core machine must not decide the verdict; load average up to 10 was seen):
 *   client - infermeter TTFT <= TTFT_HOPS_MS: two loopback hops plus the openai client's own
 *   request building and SSE parsing, on an event loop it shares with infermeter here
 *   (measured: median 4-7 ms, single requests up to 17 ms under load);
 *   infermeter TTFT - prompt_ms <= SERVER_OVERHEAD_MS: HTTP parsing, chat templating,
 *   tokenization and slot launch, which the server does not time (measured: median 4-6 ms,
 *   single requests up to 54 ms under load).
 * - TPOT: the server's `predicted_per_token_ms` is t_gen / (n - 1), the same definition as
 *   infermeter's (E2E - TTFT) / (n - 1); they differ by how much longer the last token and
 *   [DONE] took to reach the proxy than the first token did, spread over n - 1 = 47 steps.
 *   The client sees the same chunks one hop after infermeter, so every request must agree
 *   with the client within TPOT_ABS_MS + TPOT_REL; the median must agree with the server
 *   within the same (measured: within 0.004-0.11 ms at 1.1-2.8 ms per token).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { quantile, startLlamaServer, startMeter, sum, withLlama, type LlamaServer, type Meter } from './llama-harness.js';

const TTFT_HOPS_MS = 15;
const SERVER_OVERHEAD_MS = 30;
const TPOT_ABS_MS = 0.3;
const TPOT_REL = 0.15;
const MAX_TOKENS = 48;

interface Timings { prompt_n: number; prompt_ms: number; predicted_n: number; predicted_ms: number; predicted_per_token_ms: number }
interface Usage { prompt_tokens: number; completion_tokens: number }

withLlama('infermeter\'s tokens, TTFT and TPOT agree with the client and with llama-server', (engine) => {
  let llama: LlamaServer;
  let meter: Meter;
  let client: OpenAI;
  let sent = 0;
  before(async () => {
    llama = await startLlamaServer(engine, { parallel: 1 });
    meter = await startMeter(llama.url);
    client = new OpenAI({ baseURL: `${meter.url}/v1`, apiKey: 'none', maxRetries: 0 });
    await one('warm up'); // first request pays one-time allocations in the server
  });
  after(async () => {
    await meter?.close();
    await llama?.close();
  });

  async function one(prompt: string) {
    sent++;
    const start = performance.now();
    const stream = await client.chat.completions.create({
      model: 'tiny-llama', messages: [{ role: 'user', content: prompt }], stream: true, max_tokens: MAX_TOKENS,
      temperature: 0, stream_options: { include_usage: true },
    });
    let first = 0;
    let last = 0;
    let usage: Usage | null = null;
    let timings: Timings | null = null;
    for await (const chunk of stream) {
      const now = performance.now();
      if (chunk.choices[0]?.delta?.content) {
        if (first === 0) first = now;
        last = now;
      }
      if (chunk.usage) usage = chunk.usage as Usage;
      const t = (chunk as unknown as { timings?: Timings }).timings;
      if (t) timings = t;
    }
    assert.ok(usage && timings, 'the server sent usage and timings');
    return { ttft: first - start, tpot: (last - first) / (usage.completion_tokens - 1), usage, timings };
  }

  test('output and input tokens equal the server\'s usage; TTFT and TPOT within the stated tolerances', async () => {
    const prompts = ['Tell me about the sea.', 'What is a token?', 'Count to ten, slowly, in French, please.', 'Why?', 'Describe a prefill.',
      'A longer prompt, so that the prefill has a little more to do than usual, before decoding.', 'Last one.'];
    const rows: string[] = [];
    const hops: number[] = [];
    const overheads: number[] = [];
    const serverTpotDiffs: number[] = [];
    for (const prompt of prompts) {
      const before = await meter.settled(sent);
      const c = await one(prompt);
      const after = await meter.settled(sent);
      const delta = (name: string, match: Record<string, string> = {}) => sum(after, name, match) - sum(before, name, match);
      const out = { gen_ai_token_type: 'output' };
      const inp = { gen_ai_token_type: 'input' };
      assert.equal(delta('infermeter_tokens_total', out), c.usage.completion_tokens, 'infermeter_tokens_total output');
      assert.equal(delta('gen_ai_client_token_usage_sum', out), c.usage.completion_tokens, 'gen_ai_client_token_usage output');
      assert.equal(delta('infermeter_tokens_total', inp), c.usage.prompt_tokens, 'infermeter_tokens_total input');
      assert.equal(c.usage.completion_tokens, MAX_TOKENS);
      assert.equal(c.timings.predicted_n, c.usage.completion_tokens);

      const ttft = delta('gen_ai_server_time_to_first_token_seconds_sum') * 1000;
      const tpot = delta('gen_ai_server_time_per_output_token_seconds_sum') * 1000;
      const serverTpot = c.timings.predicted_per_token_ms;
      rows.push(`ttft client ${c.ttft.toFixed(2)} infermeter ${ttft.toFixed(2)} server prompt_ms ${c.timings.prompt_ms.toFixed(2)} (n ${c.timings.prompt_n}) | `
        + `tpot client ${c.tpot.toFixed(3)} infermeter ${tpot.toFixed(3)} server ${serverTpot.toFixed(3)}`);

      assert.ok(c.ttft >= ttft, `client TTFT ${c.ttft} >= infermeter TTFT ${ttft}`);
      assert.ok(ttft >= c.timings.prompt_ms, `infermeter TTFT ${ttft} contains the server's prefill ${c.timings.prompt_ms}`);
      const tol = TPOT_ABS_MS + TPOT_REL * serverTpot;
      assert.ok(Math.abs(tpot - c.tpot) <= tol, `infermeter TPOT ${tpot} vs client ${c.tpot}: within ${tol.toFixed(3)} ms`);
      hops.push(c.ttft - ttft);
      overheads.push(ttft - c.timings.prompt_ms);
      serverTpotDiffs.push(Math.abs(tpot - serverTpot) - tol);
    }
    console.log(rows.map((r) => `# ${r}`).join('\n'));
    const median = (xs: number[]) => quantile(xs, 0.5);
    assert.ok(median(hops) <= TTFT_HOPS_MS, `median client - infermeter TTFT ${median(hops).toFixed(2)} ms <= ${TTFT_HOPS_MS} ms (${hops.map((h) => h.toFixed(1)).join(', ')})`);
    assert.ok(median(overheads) <= SERVER_OVERHEAD_MS, `median infermeter TTFT - prompt_ms ${median(overheads).toFixed(2)} ms <= ${SERVER_OVERHEAD_MS} ms (${overheads.map((h) => h.toFixed(1)).join(', ')})`);
    assert.ok(median(serverTpotDiffs) <= 0, 'median TPOT within tolerance of the server\'s predicted_per_token_ms');
  });
});
