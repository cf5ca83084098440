/** --tokens-per-chunk N (speculative decoding): decode chunks carry N tokens; usage still counts tokens. */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { startSimulator } from '../../../src/sim/index.js';
import { chat, post, readEvents } from '../../helpers/sim.js';

it('several tokens per chunk: fewer chunks, same token count', async () => {
  const sim = await startSimulator({ listen: '127.0.0.1:0', speed: 'max', tokensPerChunk: 3 });
  try {
    const body = chat('Go.', { max_tokens: 12, ignore_eos: true, stream: true, stream_options: { include_usage: true, continuous_usage_stats: true } });
    const events = readEvents((await post(`${sim.url}/v1/chat/completions`, body)).text);
    const chunks = events.filter((e) => e.facts.token);
    // The prefill step yields one token, then decode steps yield 3 each: 1 + 3 + 3 + 3 + 2.
    assert.deepEqual(chunks.map((e) => e.facts.completionTokens), [1, 4, 7, 10, 12]);
    assert.equal(events.find((e) => e.facts.usageOnly)!.facts.completionTokens, 12);
  } finally {
    await sim.close();
  }
});
