/** Reasoning deltas come before content (field chosen by flag); requests with tools get a tool call. */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { startSimulator } from '../../../src/sim/index.js';
import { chat, post, readEvents } from '../../helpers/sim.js';

for (const field of ['reasoning', 'reasoning_content'] as const) {
  it(`--reasoning ${field}: reasoning tokens first, counted as tokens but not visible output`, async () => {
    const sim = await startSimulator({ listen: '127.0.0.1:0', speed: 'max', reasoning: field });
    try {
      const events = readEvents((await post(`${sim.url}/v1/chat/completions`, chat('Think.', { max_tokens: 20, ignore_eos: true, stream: true }))).text);
      const tokens = events.filter((e) => e.facts.token);
      const kinds = tokens.map((e) => (field in e.doc!['choices'][0].delta ? 'r' : 'c')).join('');
      assert.match(kinds, /^r+c+$/);
      assert.equal(tokens[0]!.facts.visible, false);
      const doc = JSON.parse((await post(`${sim.url}/v1/chat/completions`, chat('Think.', { max_tokens: 20, ignore_eos: true }))).text);
      assert.ok(doc.choices[0].message[field].length > 0);
    } finally {
      await sim.close();
    }
  });
}

it('a request with tools is answered with a streamed tool call', async () => {
  const sim = await startSimulator({ listen: '127.0.0.1:0', speed: 'max', outputTokens: '8-12' });
  try {
    const tools = [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } }];
    const events = readEvents((await post(`${sim.url}/v1/chat/completions`, chat('Find it.', { tools, stream: true }))).text);
    const calls = events.filter((e) => e.facts.token);
    assert.equal(calls[0]!.doc!['choices'][0].delta.tool_calls[0].function.name, 'lookup');
    assert.match(calls[0]!.doc!['choices'][0].delta.tool_calls[0].id, /^chatcmpl-tool-[0-9a-f]{32}$/);
    const args = calls.slice(1).map((e) => e.doc!['choices'][0].delta.tool_calls[0].function.arguments).join('');
    assert.equal(typeof JSON.parse(args).query, 'string');
    assert.equal(events.find((e) => e.doc?.['choices']?.[0]?.finish_reason)!.doc!['choices'][0].finish_reason, 'tool_calls');
  } finally {
    await sim.close();
  }
});
