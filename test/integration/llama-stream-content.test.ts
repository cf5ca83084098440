/**
 * Real engine: what the official `openai` client receives through infermeter is what it
 * receives from llama-server directly — same text, same chunking, same finish reason — for
 * streaming chat and streaming completions. Greedy decoding (temperature 0, fixed seed) makes
 * the server deterministic; that is checked first, direct against direct.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { readSse, startLlamaServer, startMeter, withLlama, type LlamaServer, type Meter } from './llama-harness.js';

interface Transcript { pieces: string[]; finish: string | null; usage: unknown }

async function chat(baseURL: string, prompt: string, extra: Record<string, unknown> = {}): Promise<Transcript> {
  const client = new OpenAI({ baseURL: `${baseURL}/v1`, apiKey: 'none', maxRetries: 0 });
  const stream = await client.chat.completions.create({
    model: 'tiny-llama', messages: [{ role: 'user', content: prompt }], stream: true, max_tokens: 24, temperature: 0, seed: 1, ...extra,
  });
  const out: Transcript = { pieces: [], finish: null, usage: null };
  for await (const chunk of stream) {
    const c = chunk.choices[0];
    if (c?.delta?.content) out.pieces.push(c.delta.content);
    if (c?.finish_reason) out.finish = c.finish_reason;
    if (chunk.usage) out.usage = chunk.usage;
  }
  return out;
}

async function complete(baseURL: string, prompt: string): Promise<Transcript> {
  const client = new OpenAI({ baseURL: `${baseURL}/v1`, apiKey: 'none', maxRetries: 0 });
  const stream = await client.completions.create({ model: 'tiny-llama', prompt, stream: true, max_tokens: 24, temperature: 0, seed: 1 });
  const out: Transcript = { pieces: [], finish: null, usage: null };
  for await (const chunk of stream) {
    const c = chunk.choices[0];
    if (c?.text) out.pieces.push(c.text);
    if (c?.finish_reason) out.finish = c.finish_reason;
    if (chunk.usage) out.usage = chunk.usage;
  }
  return out;
}

withLlama('streamed content through infermeter equals the direct stream', (engine) => {
  let llama: LlamaServer;
  let meter: Meter;
  before(async () => {
    llama = await startLlamaServer(engine, { parallel: 2 });
    meter = await startMeter(llama.url);
  });
  after(async () => {
    await meter?.close();
    await llama?.close();
  });

  test('the server is deterministic: direct against direct', async () => {
    const a = await chat(llama.url, 'Tell me about the sea.');
    const b = await chat(llama.url, 'Tell me about the sea.');
    assert.equal(a.pieces.length, 24, 'one chunk per token, never cut short by EOS (the tiny model cannot emit it)');
    assert.deepEqual(b.pieces, a.pieces);
    const c = await complete(llama.url, 'Once upon a time');
    const d = await complete(llama.url, 'Once upon a time');
    assert.deepEqual(d.pieces, c.pieces);
  });

  test('streaming chat: same chunks and finish reason through infermeter', async () => {
    for (const prompt of ['Tell me about the sea.', 'Write a haiku about latency.']) {
      const direct = await chat(llama.url, prompt);
      const proxied = await chat(meter.url, prompt);
      assert.deepEqual(proxied.pieces, direct.pieces, prompt);
      assert.equal(proxied.finish, 'length');
      assert.equal(proxied.finish, direct.finish);
    }
  });

  test('streaming completions: same chunks and finish reason through infermeter', async () => {
    const direct = await complete(llama.url, 'Once upon a time');
    const proxied = await complete(meter.url, 'Once upon a time');
    assert.equal(direct.pieces.length, 24);
    assert.deepEqual(proxied.pieces, direct.pieces);
    assert.equal(proxied.finish, direct.finish);
  });

  test('a client that asks for usage gets the server\'s usage through infermeter', async () => {
    const opts = { stream_options: { include_usage: true } };
    const direct = await chat(llama.url, 'Tell me about the sea.', opts);
    const proxied = await chat(meter.url, 'Tell me about the sea.', opts);
    assert.deepEqual(proxied.pieces, direct.pieces);
    assert.ok(proxied.usage, 'usage reached the client');
    assert.equal((proxied.usage as { completion_tokens: number }).completion_tokens, 24);
    assert.equal((proxied.usage as { prompt_tokens: number }).prompt_tokens, (direct.usage as { prompt_tokens: number }).prompt_tokens);
  });

  // llama.cpp extension: a chat stream that did not ask for usage carries `timings` on its
  // finish chunk. With include_usage injected (the default) the server moves `timings` onto
  // the separate usage chunk, which infermeter hides from this client: every content chunk is
  // unchanged, `timings` is gone (README documents it). --inject-usage=false keeps the stream
  // exactly as the server sends it.
  test('llama.cpp timings: hidden with the injected usage chunk; kept with --inject-usage=false', async () => {
    const post = async (base: string) => readSse(await fetch(`${base}/v1/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'tiny-llama', messages: [{ role: 'user', content: 'hi' }], stream: true, max_tokens: 4, temperature: 0 }),
    }));
    const direct = await post(llama.url);
    assert.equal(direct.events.filter((e) => 'timings' in e).length, 1, 'direct: timings on the finish chunk');
    const injected = await post(meter.url);
    assert.equal(injected.events.length, direct.events.length, 'same number of events');
    assert.equal(injected.events.filter((e) => 'timings' in e).length, 0, 'the documented trade-off');
    const plain = await startMeter(llama.url, { injectUsage: 'false' });
    try {
      const kept = await post(plain.url);
      assert.equal(kept.events.length, direct.events.length);
      assert.equal(kept.events.filter((e) => 'timings' in e).length, 1, 'through infermeter without injection: timings kept');
    } finally {
      await plain.close();
    }
  });
});
