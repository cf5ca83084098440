/** The official openai client (v6) streams and reads non-streaming answers from the simulator. */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startSimulator, type Simulator } from '../../src/sim/index.js';

describe('openai client against the simulator', () => {
  let sim: Simulator;
  let client: OpenAI;
  before(async () => {
    sim = await startSimulator({ listen: '127.0.0.1:0', speed: 'max', models: 'sim-a,sim-b' });
    client = new OpenAI({ baseURL: `${sim.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  });
  after(() => sim.close());

  it('lists the served models', async () => {
    const ids: string[] = [];
    for await (const m of client.models.list()) ids.push(m.id);
    assert.deepEqual(ids, ['sim-a', 'sim-b']);
  });

  it('streams chat with usage', async () => {
    const vllmExtras = { ignore_eos: true } as object; // vLLM's own sampling parameter
    const stream = await client.chat.completions.create({
      model: 'sim-b', messages: [{ role: 'user', content: 'Say something.' }], max_tokens: 10, stream: true, stream_options: { include_usage: true },
      ...vllmExtras,
    });
    let text = '';
    let usage: OpenAI.CompletionUsage | null | undefined;
    let finish: string | null = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    assert.ok(text.trim().length > 0);
    assert.equal(finish, 'length');
    assert.equal(usage?.completion_tokens, 10);
    assert.equal(usage?.total_tokens, usage!.prompt_tokens + 10);
  });

  it('answers chat and completions without streaming', async () => {
    const chat = await client.chat.completions.create({ model: 'sim-a', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 5 });
    assert.equal(chat.choices[0]!.message.role, 'assistant');
    assert.ok(chat.usage!.completion_tokens <= 5);
    const done = await client.completions.create({ model: 'sim-a', prompt: 'Once', max_tokens: 4 });
    assert.equal(done.usage!.completion_tokens, 4);
    assert.equal(typeof done.choices[0]!.text, 'string');
  });

  it('surfaces an unknown model as NotFoundError', async () => {
    await assert.rejects(client.chat.completions.create({ model: 'nope', messages: [{ role: 'user', content: 'x' }] }), OpenAI.NotFoundError);
  });
});
