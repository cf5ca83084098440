/** The same --seed and prompt give the same text, on any server instance; another seed does not. */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { startSimulator } from '../../../src/sim/index.js';
import { chat, post } from '../../helpers/sim.js';

async function reply(seed: number, body: Record<string, unknown>): Promise<{ text: string; tokens: number }> {
  const sim = await startSimulator({ listen: '127.0.0.1:0', speed: 'max', seed });
  try {
    const doc = JSON.parse((await post(`${sim.url}/v1/chat/completions`, body)).text);
    return { text: doc.choices[0].message.content, tokens: doc.usage.completion_tokens };
  } finally {
    await sim.close();
  }
}

it('same seed, same text and length; other seeds differ', async () => {
  const body = chat('Write a haiku about queues.', { max_tokens: 200 });
  const a = await reply(7, body);
  const b = await reply(7, body);
  const c = await reply(8, body);
  const d = await reply(7, { ...body, seed: 123 });
  assert.deepEqual(a, b);
  assert.ok(a.text.length > 0);
  assert.notEqual(c.text, a.text);
  assert.notEqual(d.text, a.text);
});
