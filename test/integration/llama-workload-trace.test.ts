/**
 * Real engine, the workload trace: llama-server through infermeter, with the model's own GGUF
 * as the tokenizer (--tokenizers, converted by lib/gguf-tokenizer.ts). Per API, streamed and
 * not: input and output lengths equal the usage the server reported to the client; and the
 * block ids equal those cut from the server's own tokens (/apply-template then /tokenize for
 * the chat-like APIs, /tokenize of the prompt for completions), hashed with the trace's salt.
 * Then the same traffic without a tokenizer: lengths still the usage, ids from characters.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PrefixHasher, blockIds } from '../../src/lib/block-hash.js';
import { startLlamaServer, startMeter, withLlama, type LlamaServer, type Meter } from './llama-harness.js';
import { APIS, body, send, waitForLines, type Api, type Line, type Sent } from './workload-trace-helpers.js';

const SALT = 'llama-trace-salt';
const BLOCK = 16;
const SYSTEM = 'You are a careful assistant. Answer in one short sentence, and never use lists or headings in the answer.';
const USERS = ['What is a token?', 'Tell me about the sea, and the ships that sail it at night.', 'Why is the sky blue?'];

/** The server's own tokens of what this request's prompt became. */
async function engineTokens(url: string, api: Api, system: string, user: string): Promise<number[]> {
  const post = async (path: string, payload: unknown) => (await (await fetch(url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(payload) })).json()) as Record<string, unknown>;
  let prompt: string;
  if (api === 'completions') prompt = system + user;
  else prompt = (await post('/apply-template', { messages: [{ role: 'system', content: system }, { role: 'user', content: user }] }))['prompt'] as string;
  return (await post('/tokenize', { content: prompt, add_special: true, parse_special: api !== 'completions' }))['tokens'] as number[];
}

withLlama('workload trace against llama-server: lengths equal its usage; with its GGUF as tokenizer, blocks equal those of its own /tokenize', (engine) => {
  let llama: LlamaServer;
  const dir = mkdtempSync(join(tmpdir(), 'llama-trace-'));
  before(async () => {
    llama = await startLlamaServer(engine, { parallel: 1 });
  });
  after(async () => {
    await llama?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function record(file: string, flags: Record<string, string>): Promise<{ sent: (Sent & { user: string })[]; lines: Line[] }> {
    const meter: Meter = await startMeter(llama.url, { workloadTrace: file, promptHashSalt: SALT, workloadTraceBlockTokens: String(BLOCK), ...flags });
    const sent: (Sent & { user: string })[] = [];
    try {
      for (const api of APIS) {
        for (const stream of [false, true]) {
          for (const user of USERS) {
            const r = await send(meter.url, api, body(api, 'tiny-llama', SYSTEM, user, stream, 4));
            assert.equal(r.status, 200, `${api} stream=${stream}`);
            sent.push({ ...r, user });
            // One request at a time, its line written before the next: lines in sending order.
            await waitForLines(file, sent.length, 20_000);
          }
        }
      }
    } finally {
      await meter.close();
    }
    return { sent, lines: readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Line) };
  }

  test('with the GGUF as tokenizer: lengths are the usage, ids are those of the server\'s own tokens', async () => {
    const file = join(dir, 'tokens.jsonl');
    const { sent, lines } = await record(file, { tokenizers: `tiny-llama=${engine.model}` });
    const hasher = new PrefixHasher(SALT);
    const differ: string[] = [];
    for (const [i, s] of sent.entries()) {
      const l = lines[i]!;
      assert.equal(l.api, s.api);
      assert.equal(l.input_length, s.input, `${s.api} stream=${s.stream}: input_length is the server's usage`);
      assert.equal(l.output_length, s.output, `${s.api} stream=${s.stream}: output_length is the server's usage`);
      const ids = await engineTokens(llama.url, s.api, SYSTEM, s.user);
      if (ids.length !== s.input) differ.push(`${s.api}: /tokenize ${ids.length}, usage ${s.input}`);
      assert.deepEqual(l.hash_ids, blockIds(hasher.tokens(ids, BLOCK), BLOCK, l.input_length), `${s.api} stream=${s.stream} "${s.user}": blocks of the server's own tokens`);
    }
    assert.deepEqual(differ, [], 'the server\'s /tokenize agrees with its usage');
    const meta = JSON.parse(readFileSync(`${file}.meta.json`, 'utf8')) as { cut: Record<string, { cut: string; tokenizer: string | null }> };
    assert.deepEqual(meta.cut['tiny-llama'], { cut: 'tokens', tokenizer: engine.model });
  });

  test('without a tokenizer: lengths still the usage, ids from characters, shared system prompt still shared', async () => {
    const file = join(dir, 'chars.jsonl');
    const { sent, lines } = await record(file, { hfHubCache: 'none' });
    for (const [i, s] of sent.entries()) {
      assert.equal(lines[i]!.input_length, s.input);
      assert.equal(lines[i]!.input_length_source, 'usage');
      assert.equal(lines[i]!.hash_ids.length, Math.ceil(s.input / BLOCK));
    }
    const meta = JSON.parse(readFileSync(`${file}.meta.json`, 'utf8')) as { cut: Record<string, { cut: string }> };
    assert.equal(meta.cut['tiny-llama']!.cut, 'chars');
    // The system prompt is about 100 characters = 25 tokens at 4 a token: one 16-token block, shared by every chat request.
    const chat = lines.filter((l) => l.api === 'chat');
    for (const l of chat) assert.equal(l.hash_ids[0], chat[0]!.hash_ids[0]);
  });
});
