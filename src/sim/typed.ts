/**
 * The Anthropic Messages and OpenAI Responses APIs as vLLM serves them (see
 * test/fixtures/vllm-messages-*.sse and vllm-responses-*.sse, reconstructed from
 * vllm/entrypoints/anthropic/serving.py and vllm/entrypoints/openai/responses/): `event:` +
 * `data:` pairs, compact JSON; Messages in pydantic's declared field order, Responses in
 * openai-python's alphabetical order with a sequence number on every event. A stream opens a
 * block (thinking/text/tool_use) or an output item (reasoning/message/function_call) when the
 * kind of its tokens changes and closes it before the next. Token texts are JSON-safe already.
 */
import { withMetrics, type Kind, type Usage } from './chunks.js';

export interface TypedIdentity {
  id: string;
  created: number;
  model: string;
  tool: { id: string; name: string } | null;
  maxTokens: number;
}

/** A stream of one API: its events as text, given the tokens in order. */
export interface TypedStream {
  start(promptTokens: number): string;
  /** The first tool-call token: the call opens, with no arguments yet. */
  toolHead(): string;
  piece(kind: Kind, text: string): string;
  finish(finish: string, usage: Usage): string;
  error(message: string): string;
}

const ev = (type: string, json: string): string => `event: ${type}\ndata: ${json}\n\n`;
const STOP_REASON: Record<string, string> = { stop: 'end_turn', length: 'max_tokens', tool_calls: 'tool_use' };

export function messagesStream(who: TypedIdentity, rand: () => number): TypedStream {
  let index = -1;
  let open: Kind | null = null;
  const close = (): string => {
    if (open === null) return '';
    // vLLM signs a thinking block as it closes it.
    const sig = open === 'reasoning' ? ev('content_block_delta', `{"type":"content_block_delta","delta":{"type":"signature_delta","signature":"${hex(rand)}"},"index":${index}}`) : '';
    open = null;
    return sig + ev('content_block_stop', `{"type":"content_block_stop","index":${index}}`);
  };
  const begin = (kind: Kind): string => {
    const out = close();
    index++;
    open = kind;
    const block = kind === 'reasoning' ? '{"type":"thinking","thinking":""}'
      : kind === 'tool' ? `{"type":"tool_use","id":"${who.tool?.id ?? ''}","name":${JSON.stringify(who.tool?.name ?? '')},"input":{}}`
      : '{"type":"text","text":""}';
    return out + ev('content_block_start', `{"type":"content_block_start","content_block":${block},"index":${index}}`);
  };
  const field: Record<Kind, string> = { reasoning: '"type":"thinking_delta","thinking"', content: '"type":"text_delta","text"', tool: '"type":"input_json_delta","partial_json"' };
  return {
    start: (prompt) => ev('message_start', `{"type":"message_start","message":{"id":"${who.id}","content":[],"model":${JSON.stringify(who.model)},"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":${prompt},"output_tokens":0}}}`),
    toolHead: () => begin('tool'),
    // vLLM sends no delta for an empty piece (the end-of-sequence token).
    piece: (kind, text) => text === '' ? '' : (open === kind ? '' : begin(kind)) + ev('content_block_delta', `{"type":"content_block_delta","delta":{${field[kind]}:"${text}"},"index":${index}}`),
    finish: (finish, u) => close()
      + ev('message_delta', `{"type":"message_delta","delta":{"stop_reason":"${STOP_REASON[finish] ?? 'end_turn'}"},"usage":{"input_tokens":${u.prompt},"output_tokens":${u.completion}}}`)
      + ev('message_stop', '{"type":"message_stop"}'),
    error: (message) => ev('error', JSON.stringify({ type: 'error', error: { type: 'internal_error', message } })),
  };
}

/** vLLM's ResponsesResponse, fields in its declared order. */
function responseObject(who: TypedIdentity, status: string, output: unknown[], usage: Usage | null, background = false): Record<string, unknown> {
  return {
    id: who.id, created_at: who.created, incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null, instructions: null, metadata: null,
    model: who.model, object: 'response', output, parallel_tool_calls: true, temperature: 1.0, tool_choice: 'auto', tools: [], top_p: 1.0,
    background, max_output_tokens: who.maxTokens, max_tool_calls: null, previous_response_id: null, prompt: null, reasoning: null,
    service_tier: 'auto', status, text: null, top_logprobs: null, truncation: 'disabled', usage: usage === null ? null : responseUsage(usage), user: null,
    input_messages: null, output_messages: null,
  };
}

function responseUsage(u: Usage): Record<string, unknown> {
  return {
    input_tokens: u.prompt, input_tokens_details: { cached_tokens: u.cached ?? 0 },
    output_tokens: u.completion, output_tokens_details: { reasoning_tokens: u.reasoning ?? 0 }, total_tokens: u.prompt + u.completion,
  };
}

/** An output item as the done events and the final response carry it; `text` is JSON-escaped. */
function outputItem(kind: Kind, id: string, text: string, who: TypedIdentity, status: string): string {
  if (kind === 'reasoning') return `{"id":"${id}","summary":[],"type":"reasoning","content":[{"text":"${text}","type":"reasoning_text"}],"encrypted_content":null,"status":"${status}"}`;
  if (kind === 'tool') return `{"arguments":"${text}","call_id":"${who.tool?.id ?? ''}","name":${JSON.stringify(who.tool?.name ?? '')},"type":"function_call","id":"${id}","status":"${status}"}`;
  return `{"id":"${id}","content":[{"annotations":[],"text":"${text}","type":"output_text","logprobs":null}],"role":"assistant","status":"${status}","type":"message"}`;
}

export function responsesStream(who: TypedIdentity, rand: () => number): TypedStream {
  let seq = 0;
  let outputIndex = -1;
  let open: Kind | null = null;
  let itemId = '';
  let text = '';
  const done: string[] = [];
  /** One event: the members before sequence_number, and the event type (sorted keys: `type` comes last). */
  const e = (type: string, before: string): string => ev(type, `{${before}${before === '' ? '' : ','}"sequence_number":${seq++},"type":"${type}"}`);
  const close = (): string => {
    if (open === null) return '';
    const kind = open;
    open = null;
    const at = `"output_index":${outputIndex}`;
    const item = outputItem(kind, itemId, text, who, 'completed');
    done.push(item);
    if (kind === 'tool') {
      return e('response.function_call_arguments.done', `"arguments":"${text}","item_id":"${itemId}","name":${JSON.stringify(who.tool?.name ?? '')},${at}`)
        + e('response.output_item.done', `"item":${item},${at}`);
    }
    const part = kind === 'reasoning' ? `{"text":"${text}","type":"reasoning_text"}` : `{"annotations":[],"text":"${text}","type":"output_text","logprobs":null}`;
    const textDone = kind === 'reasoning'
      ? e('response.reasoning_text.done', `"content_index":0,"item_id":"${itemId}",${at},"text":"${text}"`)
      : e('response.output_text.done', `"content_index":0,"item_id":"${itemId}","logprobs":[],${at},"text":"${text}"`);
    return textDone + e('response.content_part.done', `"content_index":0,"item_id":"${itemId}",${at},"part":${part}`) + e('response.output_item.done', `"item":${item},${at}`);
  };
  const begin = (kind: Kind): string => {
    const out = close();
    outputIndex++;
    open = kind;
    text = '';
    itemId = `${kind === 'reasoning' ? 'rs' : kind === 'tool' ? 'fc' : 'msg'}_${hex(rand).slice(0, 16)}`;
    const at = `"output_index":${outputIndex}`;
    const item = outputItem(kind, itemId, '', who, 'in_progress').replace('"content":[{"annotations":[],"text":"","type":"output_text","logprobs":null}]', '"content":[]').replace('"content":[{"text":"","type":"reasoning_text"}]', '"content":null');
    const added = e('response.output_item.added', `"item":${item},${at}`);
    if (kind === 'tool') return out + added;
    const part = kind === 'reasoning' ? '{"text":"","type":"reasoning_text"}' : '{"annotations":[],"text":"","type":"output_text","logprobs":[]}';
    return out + added + e('response.content_part.added', `"content_index":0,"item_id":"${itemId}",${at},"part":${part}`);
  };
  return {
    start: () => {
      const r = JSON.stringify(responseObject(who, 'in_progress', [], null));
      return e('response.created', `"response":${r}`) + e('response.in_progress', `"response":${r}`);
    },
    toolHead: () => begin('tool'),
    piece: (kind, t) => {
      if (t === '') return '';
      const out = open === kind ? '' : begin(kind);
      text += t;
      const at = `"output_index":${outputIndex}`;
      if (kind === 'tool') return out + e('response.function_call_arguments.delta', `"delta":"${t}","item_id":"${itemId}",${at}`);
      if (kind === 'reasoning') return out + e('response.reasoning_text.delta', `"content_index":0,"delta":"${t}","item_id":"${itemId}",${at}`);
      return out + e('response.output_text.delta', `"content_index":0,"delta":"${t}","item_id":"${itemId}","logprobs":[],${at}`);
    },
    finish: (finish, u) => {
      const out = close();
      const status = finish === 'length' ? 'incomplete' : 'completed';
      const r = JSON.stringify({ ...responseObject(who, status, [], u), output: '\u0000', ...withMetrics(u) }).replace('"\\u0000"', `[${done.join(',')}]`);
      return out + e(status === 'incomplete' ? 'response.incomplete' : 'response.completed', `"response":${r}`);
    },
    error: (message) => e('error', `"code":"internal_error","message":${JSON.stringify(message)},"param":null`),
  };
}

function hex(rand: () => number): string {
  let s = '';
  for (let i = 0; i < 32; i++) s += Math.floor(rand() * 16).toString(16);
  return s;
}

export interface CollectedTyped {
  content: string;
  reasoning: string;
  toolArgs: string;
}

/** vLLM's non-streamed Messages body (messages_full_converter). */
export function messagesBody(who: TypedIdentity, out: CollectedTyped, finish: string, u: Usage, rand: () => number): string {
  const content: unknown[] = [];
  if (out.reasoning !== '') content.push({ type: 'thinking', thinking: out.reasoning, signature: hex(rand) });
  if (out.content !== '') content.push({ type: 'text', text: out.content });
  if (who.tool) content.push({ type: 'tool_use', id: who.tool.id, name: who.tool.name, input: parseArgs(out.toolArgs) });
  return JSON.stringify({
    id: who.id, type: 'message', role: 'assistant', content, model: who.model, stop_reason: STOP_REASON[finish] ?? 'end_turn', stop_sequence: null,
    usage: { input_tokens: u.prompt, output_tokens: u.completion },
  });
}

/** vLLM's non-streamed Responses body. */
export function responsesBody(who: TypedIdentity, out: CollectedTyped, finish: string, u: Usage, rand: () => number): string {
  const output: unknown[] = [];
  const esc = (s: string) => JSON.stringify(s).slice(1, -1);
  if (out.reasoning !== '') output.push(JSON.parse(outputItem('reasoning', `rs_${hex(rand).slice(0, 16)}`, esc(out.reasoning), who, 'completed')));
  if (who.tool) output.push(JSON.parse(outputItem('tool', `fc_${hex(rand).slice(0, 16)}`, esc(out.toolArgs), who, 'completed')));
  else output.push(JSON.parse(outputItem('content', `msg_${hex(rand).slice(0, 16)}`, esc(out.content), who, 'completed')));
  return JSON.stringify({ ...responseObject(who, finish === 'length' ? 'incomplete' : 'completed', output, u), ...withMetrics(u) });
}

/** What a `background: true` request gets at once: the queued response, no output, no usage. */
export function queuedResponseBody(who: TypedIdentity): string {
  return JSON.stringify(responseObject(who, 'queued', [], null, true));
}

function parseArgs(args: string): unknown {
  try {
    return JSON.parse(args);
  } catch {
    return {};
  }
}
