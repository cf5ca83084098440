/**
 * The simulator serves the Anthropic Messages and OpenAI Responses APIs in vLLM's event shapes:
 * every event is an `event:` + `data:` pair whose type matches, blocks and output items open
 * and close around reasoning, text and tool calls, and the usage at the end counts exactly the
 * token events the stream carried (one token per chunk at this speed). Non-streamed bodies carry
 * the same usage; background requests are queued; token counting answers the prompt's count.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startSimulator } from '../../../src/sim/index.js';
import { MESSAGES_API, RESPONSES_API, typedBodyFacts, typedEventFacts, type TypedApi } from '../../../src/lib/api-events.js';
import { post } from '../../helpers/sim.js';

interface Typed {
  type: string;
  doc: Record<string, any>;
}

function events(text: string): Typed[] {
  const out: Typed[] = [];
  for (const block of text.split('\n\n').filter((b) => b !== '')) {
    const [eventLine, dataLine, ...rest] = block.split('\n');
    assert.equal(rest.length, 0, block);
    assert.match(eventLine!, /^event: /);
    assert.match(dataLine!, /^data: /);
    const doc = JSON.parse(dataLine!.slice(6)) as Record<string, any>;
    assert.equal(doc['type'], eventLine!.slice(7), 'the event line names the data type');
    out.push({ type: doc['type'] as string, doc });
  }
  return out;
}

function tally(api: TypedApi, evs: Typed[]): { tokens: number; visible: number; firstVisible: number; output: number; input: number; reasoning: number } {
  let tokens = 0;
  let visible = 0;
  let firstVisible = -1;
  let output = -1;
  let input = -1;
  let reasoning = -1;
  evs.forEach((e, i) => {
    const f = typedEventFacts(api, e.doc);
    if (f.token) tokens++;
    if (f.visible) {
      visible++;
      if (firstVisible < 0) firstVisible = i;
    }
    if (f.completionTokens >= 0) output = f.completionTokens;
    if (f.promptTokens >= 0) input = f.promptTokens;
    if (f.reasoningTokens >= 0) reasoning = f.reasoningTokens;
  });
  return { tokens, visible, firstVisible, output, input, reasoning };
}

test('Messages: a reasoning stream is message_start, a thinking block (signed), a text block, message_delta with usage, message_stop', async () => {
  const sim = await startSimulator({ listen: '127.0.0.1:0', speed: 'max', reasoning: 'reasoning', outputTokens: '20-20' });
  try {
    const r = await post(`${sim.url}/v1/messages`, { model: sim.options.models[0], max_tokens: 64, stream: true, messages: [{ role: 'user', content: 'hello there' }] });
    assert.equal(r.status, 200);
    assert.match(String(r.headers['content-type']), /text\/event-stream/);
    const evs = events(r.text);
    assert.deepEqual([evs[0]!.type, evs.at(-2)!.type, evs.at(-1)!.type], ['message_start', 'message_delta', 'message_stop']);
    const starts = evs.filter((e) => e.type === 'content_block_start').map((e) => e.doc['content_block'].type);
    assert.deepEqual(starts, ['thinking', 'text']);
    assert.ok(evs.some((e) => e.doc['delta']?.type === 'signature_delta'), 'thinking block signed as it closes');
    const t = tally(MESSAGES_API, evs);
    assert.equal(t.tokens, 19, 'the end-of-sequence token sends no delta');
    assert.equal(t.output, 20);
    assert.ok(t.input > 0);
    assert.ok(t.visible > 0 && t.visible < t.tokens, 'reasoning is not visible output');
  } finally {
    await sim.close();
  }
});

test('Messages: a tool call is a tool_use block with input_json_delta; the body form carries the same usage', async () => {
  const sim = await startSimulator({ listen: '127.0.0.1:0', speed: 'max', outputTokens: '8-8' });
  try {
    const tools = [{ name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }];
    const body = { model: sim.options.models[0], max_tokens: 64, messages: [{ role: 'user', content: 'weather?' }], tools };
    const s = events((await post(`${sim.url}/v1/messages`, { ...body, stream: true })).text);
    const start = s.find((e) => e.type === 'content_block_start')!;
    assert.equal(start.doc['content_block'].type, 'tool_use');
    assert.equal(start.doc['content_block'].name, 'get_weather');
    assert.ok(s.some((e) => e.doc['delta']?.type === 'input_json_delta'));
    assert.equal(s.find((e) => e.type === 'message_delta')!.doc['delta'].stop_reason, 'tool_use');
    const t = tally(MESSAGES_API, s);
    assert.equal(t.output, 8);
    assert.equal(t.tokens, 7, 'the tool head carries no arguments (the closing brace is the last token)');
    const nb = await post(`${sim.url}/v1/messages`, body);
    const doc = JSON.parse(nb.text);
    assert.equal(doc.type, 'message');
    assert.equal(doc.content.at(-1).type, 'tool_use');
    assert.equal(typedBodyFacts(MESSAGES_API, doc).completionTokens, 8);
  } finally {
    await sim.close();
  }
});

test('Responses: reasoning then a message, sequence numbers in order, response.completed with usage and details', async () => {
  const sim = await startSimulator({ listen: '127.0.0.1:0', speed: 'max', reasoning: 'reasoning', outputTokens: '20-20', reasoningTokensDetails: 'true' });
  try {
    const r = await post(`${sim.url}/v1/responses`, { model: sim.options.models[0], input: 'hello there', stream: true });
    const evs = events(r.text);
    assert.deepEqual(evs.map((e) => e.doc['sequence_number']), evs.map((_, i) => i));
    assert.deepEqual([evs[0]!.type, evs[1]!.type, evs.at(-1)!.type], ['response.created', 'response.in_progress', 'response.completed']);
    const items = evs.filter((e) => e.type === 'response.output_item.added').map((e) => e.doc['item'].type);
    assert.deepEqual(items, ['reasoning', 'message']);
    const t = tally(RESPONSES_API, evs);
    assert.equal(t.tokens, 19, 'the end-of-sequence token sends no delta');
    assert.equal(t.output, 20);
    assert.ok(t.reasoning > 0 && t.reasoning < 20);
    assert.equal(evs.at(-1)!.doc['response'].output.length, 2);
    const nb = JSON.parse((await post(`${sim.url}/v1/responses`, { model: sim.options.models[0], input: 'hello there' })).text);
    assert.equal(nb.object, 'response');
    assert.equal(nb.status, 'completed');
    assert.equal(typedBodyFacts(RESPONSES_API, nb).completionTokens, 20);
  } finally {
    await sim.close();
  }
});

test('Responses: function calls, max_output_tokens ends in response.incomplete, background is queued, input_tokens counts', async () => {
  const sim = await startSimulator({ listen: '127.0.0.1:0', speed: 'max', outputTokens: '30-30' });
  try {
    const model = sim.options.models[0];
    const tools = [{ type: 'function', name: 'lookup', parameters: { type: 'object' } }];
    const fc = events((await post(`${sim.url}/v1/responses`, { model, input: 'find it', tools, stream: true })).text);
    assert.ok(fc.some((e) => e.type === 'response.function_call_arguments.delta'));
    assert.equal(fc.find((e) => e.type === 'response.output_item.added')!.doc['item'].name, 'lookup');
    const cut = events((await post(`${sim.url}/v1/responses`, { model, input: 'go on', max_output_tokens: 5, stream: true })).text);
    assert.equal(cut.at(-1)!.type, 'response.incomplete');
    assert.equal(tally(RESPONSES_API, cut).output, 5);
    const bg = JSON.parse((await post(`${sim.url}/v1/responses`, { model, input: 'later', background: true })).text);
    assert.equal(bg.status, 'queued');
    assert.equal(bg.usage, null);
    const count = JSON.parse((await post(`${sim.url}/v1/responses/input_tokens`, { model, input: 'hello there' })).text);
    const counted = JSON.parse((await post(`${sim.url}/v1/messages/count_tokens`, { model, messages: [{ role: 'user', content: 'hello there' }] })).text);
    assert.ok(count.input_tokens > 0 && counted.input_tokens > 0);
  } finally {
    await sim.close();
  }
});
