/**
 * Streaming events and response bodies in the exact shapes vLLM (0.9/0.10, V1) sends; see
 * test/fixtures/vllm-*.sse. Each stream gets its JSON prefix serialized once; a chunk is
 * then a few string concatenations (the token texts are JSON-safe already).
 */

export type Kind = 'content' | 'reasoning' | 'tool';

export interface Usage {
  prompt: number;
  completion: number;
  /** prompt_tokens_details.cached_tokens (vLLM --enable-prompt-tokens-details); null: not reported. */
  cached?: number | null;
  /** completion_tokens_details.reasoning_tokens (OpenAI's shape); null: not reported. */
  reasoning?: number | null;
  /** vLLM's per-request `metrics` (--enable-per-request-metrics); undefined: not sent. */
  timing?: PerRequestTiming;
}

/** vLLM's PerRequestTimingMetrics (0.25): from its queued, scheduled, first and last token times. */
export interface PerRequestTiming {
  queue_time_ms: number | null;
  /** From scheduling to the first token: the queue is not in it. */
  time_to_first_token_ms: number | null;
  generation_time_ms: number | null;
  mean_itl_ms: number | null;
  tokens_per_second: number | null;
}

/** `,"metrics":{...}` for a stream's final usage chunk, or '' when not sent. */
export function metricsTail(u: Usage): string {
  return u.timing === undefined ? '' : `,"metrics":${JSON.stringify(u.timing)}`;
}

/** `{ metrics }` to spread into a non-streamed body or a final response object, or nothing when not sent. */
export const withMetrics = (u: Usage): { metrics?: PerRequestTiming } => (u.timing === undefined ? {} : { metrics: u.timing });

export function usageJson(u: Usage): string {
  const cached = u.cached == null ? '' : `,"prompt_tokens_details":{"cached_tokens":${u.cached}}`;
  const reasoning = u.reasoning == null ? '' : `,"completion_tokens_details":{"reasoning_tokens":${u.reasoning}}`;
  return `{"prompt_tokens":${u.prompt},"total_tokens":${u.prompt + u.completion},"completion_tokens":${u.completion}${cached}${reasoning}}`;
}

/** The usage object of a non-streamed body: vLLM sends prompt_tokens_details null when the option is off. */
function usageObject(u: Usage): Record<string, unknown> {
  const out: Record<string, unknown> = {
    prompt_tokens: u.prompt, total_tokens: u.prompt + u.completion, completion_tokens: u.completion,
    prompt_tokens_details: u.cached == null ? null : { cached_tokens: u.cached },
  };
  if (u.reasoning != null) out['completion_tokens_details'] = { reasoning_tokens: u.reasoning };
  return out;
}

export interface StreamFormat {
  /** The first event of a chat stream, sent with the first token; '' for completions. */
  role(usage: string | null): string;
  /** A chunk of `kind` text; `finish` is the finish reason on the last one. */
  chunk(kind: Kind, text: string, finish: string | null, usage: string | null): string;
  /** The first tool-call chunk: the call's id and function name, no arguments yet. */
  toolHead(usage: string | null): string;
  /** The extra chunk `stream_options.include_usage` asks for: no choices, only usage. */
  usageOnly(usage: string, tail?: string): string;
}

export interface StreamIdentity {
  id: string;
  created: number;
  model: string;
  reasoningField: string;
  tool: { id: string; name: string } | null;
}

export function chatStreamFormat(who: StreamIdentity): StreamFormat {
  const prefix = `data: {"id":"${who.id}","object":"chat.completion.chunk","created":${who.created},"model":${JSON.stringify(who.model)},"choices":[`;
  const tail = (finish: string | null, usage: string | null) =>
    `,"logprobs":null,"finish_reason":${finish === null ? 'null' : `"${finish}"`},"stop_reason":null}]${usage === null ? '' : `,"usage":${usage}`}}\n\n`;
  const open: Record<Kind, string> = {
    content: '{"index":0,"delta":{"content":"',
    reasoning: `{"index":0,"delta":{"${who.reasoningField}":"`,
    tool: '{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"',
  };
  const close: Record<Kind, string> = { content: '"}', reasoning: '"}', tool: '"}}]}' };
  const toolHead = who.tool
    ? `{"index":0,"delta":{"tool_calls":[{"id":"${who.tool.id}","type":"function","index":0,"function":{"name":${JSON.stringify(who.tool.name)}}}]}`
    : '';
  return {
    role: (usage) => `${prefix}{"index":0,"delta":{"role":"assistant","content":""}${tail(null, usage)}`,
    chunk: (kind, text, finish, usage) => prefix + open[kind] + text + close[kind] + tail(finish, usage),
    toolHead: (usage) => prefix + toolHead + tail(null, usage),
    usageOnly: (usage, tail = '') => `${prefix}],"usage":${usage}${tail}}\n\n`,
  };
}

export function completionStreamFormat(who: StreamIdentity): StreamFormat {
  const prefix = `data: {"id":"${who.id}","object":"text_completion","created":${who.created},"model":${JSON.stringify(who.model)},"choices":[`;
  return {
    role: () => '',
    toolHead: () => '',
    chunk: (_kind, text, finish, usage) =>
      `${prefix}{"index":0,"text":"${text}","logprobs":null,"finish_reason":${finish === null ? 'null' : `"${finish}"`},"stop_reason":null}],"usage":${usage ?? 'null'}}\n\n`,
    usageOnly: (usage, tail = '') => `${prefix}],"usage":${usage}${tail}}\n\n`,
  };
}

export const DONE_EVENT = 'data: [DONE]\n\n';

/** What vLLM sends when generation fails after the stream started (json.dumps spacing). */
export function streamErrorEvent(message: string): string {
  return `data: ${JSON.stringify({ error: { object: 'error', message, type: 'InternalServerError', param: null, code: 500 } }).replace(/":/g, '": ').replace(/,"/g, ', "')}\n\n`;
}

/** vLLM's error body for a failed request. */
export function errorBody(status: number, type: string, message: string): string {
  return JSON.stringify({ object: 'error', message, type, param: null, code: status });
}

export interface Collected {
  content: string;
  reasoning: string;
  toolArgs: string;
}

export function chatCompletionBody(who: StreamIdentity, out: Collected, finish: string, usage: Usage): string {
  const message: Record<string, unknown> = { role: 'assistant', [who.reasoningField]: out.reasoning === '' ? null : out.reasoning };
  message['content'] = who.tool ? null : out.content;
  message['tool_calls'] = who.tool ? [{ id: who.tool.id, type: 'function', function: { name: who.tool.name, arguments: out.toolArgs } }] : [];
  return JSON.stringify({
    id: who.id, object: 'chat.completion', created: who.created, model: who.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: finish, stop_reason: null }],
    usage: usageObject(usage),
    prompt_logprobs: null, kv_transfer_params: null, ...withMetrics(usage),
  });
}

export function completionBody(who: StreamIdentity, out: Collected, finish: string, usage: Usage): string {
  return JSON.stringify({
    id: who.id, object: 'text_completion', created: who.created, model: who.model,
    choices: [{ index: 0, text: out.content, logprobs: null, finish_reason: finish, stop_reason: null, prompt_logprobs: null }],
    usage: usageObject(usage),
    kv_transfer_params: null, ...withMetrics(usage),
  });
}
