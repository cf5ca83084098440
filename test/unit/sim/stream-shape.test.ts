/**
 * The simulator's streams read the way the proxy reads vLLM's: role chunk first (not a
 * token), one token per chunk, finish chunk, a usage-only chunk only when asked, [DONE].
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startSimulator, type Simulator } from '../../../src/sim/index.js';
import { chat, post, readEvents } from '../../helpers/sim.js';

describe('simulator stream shape', () => {
  let sim: Simulator;
  before(async () => {
    sim = await startSimulator({ listen: '127.0.0.1:0', speed: 'max' });
  });
  after(() => sim.close());

  const chatUrl = () => `${sim.url}/v1/chat/completions`;

  it('chat with include_usage: role chunk, N token chunks, finish, usage-only chunk, [DONE]', async () => {
    const res = await post(chatUrl(), chat('Tell me a story about a cache.', { max_tokens: 12, ignore_eos: true, stream: true, stream_options: { include_usage: true } }));
    assert.equal(res.status, 200);
    assert.match(String(res.headers['content-type']), /^text\/event-stream/);
    const events = readEvents(res.text);
    const [role, ...rest] = events;
    assert.deepEqual(role!.doc!['choices'][0].delta, { role: 'assistant', content: '' });
    assert.equal(role!.facts.token, false);
    assert.match(role!.doc!['id'], /^chatcmpl-[0-9a-f]{32}$/);
    assert.equal(events.filter((e) => e.facts.token).length, 12);
    const usage = rest.filter((e) => e.facts.usageOnly);
    assert.equal(usage.length, 1);
    assert.equal(usage[0]!.facts.completionTokens, 12);
    assert.ok(usage[0]!.facts.promptTokens > 0);
    const finish = events.find((e) => e.doc?.['choices']?.[0]?.finish_reason);
    assert.equal(finish!.doc!['choices'][0].finish_reason, 'length');
    assert.equal(events.at(-1)!.data, '[DONE]');
    assert.ok(events.every((e) => e.doc === null || e.doc['id'] === role!.doc!['id']));
  });

  it('no usage chunk and no usage field unless asked', async () => {
    const res = await post(chatUrl(), chat('Hello', { max_tokens: 5, ignore_eos: true, stream: true }));
    const events = readEvents(res.text);
    assert.equal(events.filter((e) => e.facts.usageOnly).length, 0);
    assert.ok(events.every((e) => e.doc === null || !('usage' in e.doc)));
    assert.equal(events.filter((e) => e.facts.token).length, 5);
  });

  it('continuous_usage_stats puts a growing usage on every chunk', async () => {
    const body = chat('Hello', { max_tokens: 6, ignore_eos: true, stream: true, stream_options: { include_usage: true, continuous_usage_stats: true } });
    const events = readEvents((await post(chatUrl(), body)).text).filter((e) => e.doc !== null);
    const completions = events.map((e) => e.facts.completionTokens);
    assert.deepEqual(completions, [0, 1, 2, 3, 4, 5, 6, 6]);
  });

  it('a natural stop ends with an empty-content finish chunk that carries the EOS token', async () => {
    const res = await post(chatUrl(), chat('Short answer please.', { max_tokens: 4000, stream: true, stream_options: { include_usage: true } }));
    const events = readEvents(res.text);
    const usage = events.find((e) => e.facts.usageOnly)!;
    const tokens = events.filter((e) => e.facts.token).length;
    assert.equal(tokens, usage.facts.completionTokens - 1);
    const finish = events.find((e) => e.doc?.['choices']?.[0]?.finish_reason)!;
    assert.deepEqual(finish.doc!['choices'][0].delta, { content: '' });
    assert.equal(finish.doc!['choices'][0].finish_reason, 'stop');
  });

  it('completions: cmpl- ids, text chunks with usage null, usage-only chunk when asked', async () => {
    const res = await post(`${sim.url}/v1/completions`, { prompt: 'Once upon a time', max_tokens: 7, ignore_eos: true, stream: true, stream_options: { include_usage: true } });
    const events = readEvents(res.text);
    assert.match(events[0]!.doc!['id'], /^cmpl-[0-9a-f]{32}$/);
    assert.equal(events[0]!.doc!['object'], 'text_completion');
    const tokens = events.filter((e) => e.facts.token);
    assert.equal(tokens.length, 7);
    assert.ok(tokens.every((e) => e.doc!['usage'] === null));
    assert.equal(events.find((e) => e.facts.usageOnly)!.facts.completionTokens, 7);
  });

  it('non-streaming answers carry the whole text and usage', async () => {
    const res = await post(chatUrl(), chat('Hi', { max_tokens: 9, ignore_eos: true }));
    const doc = JSON.parse(res.text);
    assert.equal(doc.object, 'chat.completion');
    assert.equal(doc.usage.completion_tokens, 9);
    assert.equal(doc.choices[0].finish_reason, 'length');
    assert.ok(doc.choices[0].message.content.length > 0);
  });

  it('prompt tokens: token-id prompts count exactly, text about 4 characters a token', async () => {
    const ids = await post(`${sim.url}/v1/completions`, { prompt: [1, 2, 3, 4, 5, 6, 7], max_tokens: 1 });
    assert.equal(JSON.parse(ids.text).usage.prompt_tokens, 7);
    const text = await post(`${sim.url}/v1/completions`, { prompt: 'x'.repeat(400), max_tokens: 1 });
    assert.equal(JSON.parse(text.text).usage.prompt_tokens, 100);
  });

  it('rejects what vLLM rejects, in its error shape', async () => {
    const unknown = await post(chatUrl(), chat('Hi', { model: 'nope' }));
    assert.equal(unknown.status, 404);
    assert.equal(JSON.parse(unknown.text).type, 'NotFoundError');
    const tooLong = await post(chatUrl(), chat('Hi', { max_tokens: 100_000 }));
    assert.equal(tooLong.status, 400);
    assert.match(JSON.parse(tooLong.text).message, /maximum context length is 8192 tokens/);
  });
});
