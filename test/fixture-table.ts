/**
 * What each captured stream must meter to, written down by hand from the fixture files
 * (index = position among `data:` events, 0-based; -1 = none).
 */
export interface StreamExpectation {
  file: string;
  firstToken: number;
  firstVisible: number;
  tokenChunks: number;
  /** Output tokens infermeter must report: usage when the stream has it, else token chunks. */
  outputTokens: number;
  source: 'usage' | 'chunks' | 'none';
  errorEvent: boolean;
}

export const STREAMS: readonly StreamExpectation[] = [
  { file: 'llama-server-chat-stream-midstream-error.sse', firstToken: 1, firstVisible: 1, tokenChunks: 84, outputTokens: 84, source: 'chunks', errorEvent: true },
  { file: 'llama-server-chat-stream-no-usage-option.sse', firstToken: 1, firstVisible: 1, tokenChunks: 3, outputTokens: 3, source: 'chunks', errorEvent: false },
  { file: 'llama-server-chat-stream.sse', firstToken: 1, firstVisible: 1, tokenChunks: 16, outputTokens: 16, source: 'usage', errorEvent: false },
  { file: 'llama-server-completions-stream.sse', firstToken: 0, firstVisible: 0, tokenChunks: 4, outputTokens: 4, source: 'usage', errorEvent: false },
  { file: 'llamacpp-chat-stream-final-usage-timings.sse', firstToken: -1, firstVisible: -1, tokenChunks: 0, outputTokens: 31, source: 'usage', errorEvent: false },
  { file: 'ollama-chat-stream-excerpt.sse', firstToken: 0, firstVisible: 0, tokenChunks: 3, outputTokens: 3, source: 'chunks', errorEvent: false },
  { file: 'ollama-chat-stream-include-usage-abridged.sse', firstToken: 0, firstVisible: 0, tokenChunks: 1, outputTokens: 40, source: 'usage', errorEvent: false },
  { file: 'tgi-2.0.1-chat-stream-chunk-excerpt.sse', firstToken: 0, firstVisible: 0, tokenChunks: 1, outputTokens: 1, source: 'chunks', errorEvent: false },
  { file: 'vllm-chat-stream-continuous-usage-v0.6.sse', firstToken: 1, firstVisible: 1, tokenChunks: 25, outputTokens: 26, source: 'usage', errorEvent: false },
  { file: 'vllm-chat-stream-reasoning-content-abridged.sse', firstToken: 1, firstVisible: 13, tokenChunks: 21, outputTokens: 21, source: 'chunks', errorEvent: false },
  { file: 'vllm-chat-stream-v0.5-excerpt.sse', firstToken: 1, firstVisible: 1, tokenChunks: 5, outputTokens: 5, source: 'chunks', errorEvent: false },
  { file: 'vllm-completions-stream-abridged.sse', firstToken: 0, firstVisible: 0, tokenChunks: 4, outputTokens: 4, source: 'chunks', errorEvent: false },
  { file: 'vllm-completions-stream-continuous-usage-excerpt.sse', firstToken: 0, firstVisible: 0, tokenChunks: 1, outputTokens: 1, source: 'usage', errorEvent: false },
];

/** Byte offsets just after each `data:` event's line end, for replaying one event per write. */
export function eventBoundaries(bytes: Buffer): number[] {
  const out: number[] = [];
  const text = bytes.toString('latin1');
  const re = /\n(?=data:)/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(text))) out.push(m.index + 1);
  return out;
}

/** A Messages or Responses stream: its route, and the input-side counts its usage reports. */
export interface TypedStreamExpectation extends StreamExpectation {
  path: '/v1/messages' | '/v1/responses';
  inputTokens: number;
  cachedTokens: number;
  reasoningTokens: number;
}

export const TYPED_STREAMS: readonly TypedStreamExpectation[] = [
  { file: 'llama-server-messages-stream.sse', path: '/v1/messages', firstToken: 2, firstVisible: 2, tokenChunks: 12, outputTokens: 12, source: 'usage', errorEvent: false, inputTokens: 34, cachedTokens: 0, reasoningTokens: 0 },
  { file: 'llama-server-responses-stream.sse', path: '/v1/responses', firstToken: 4, firstVisible: 4, tokenChunks: 12, outputTokens: 12, source: 'usage', errorEvent: false, inputTokens: 34, cachedTokens: 33, reasoningTokens: 0 },
  { file: 'vllm-messages-stream-reasoning-tool-reconstructed.sse', path: '/v1/messages', firstToken: 2, firstVisible: 9, tokenChunks: 10, outputTokens: 17, source: 'usage', errorEvent: false, inputTokens: 42, cachedTokens: 0, reasoningTokens: 0 },
  { file: 'vllm-messages-stream-midstream-error-reconstructed.sse', path: '/v1/messages', firstToken: 2, firstVisible: 2, tokenChunks: 3, outputTokens: 3, source: 'chunks', errorEvent: true, inputTokens: 42, cachedTokens: 0, reasoningTokens: 0 },
  // SGLang puts prompt_tokens (cached included) in input_tokens and the cached count again in cache_read_input_tokens.
  { file: 'sglang-messages-stream-cached-reconstructed.sse', path: '/v1/messages', firstToken: 2, firstVisible: 2, tokenChunks: 7, outputTokens: 8, source: 'usage', errorEvent: false, inputTokens: 41, cachedTokens: 16, reasoningTokens: 0 },
  { file: 'vllm-responses-stream-reasoning-reconstructed.sse', path: '/v1/responses', firstToken: 4, firstVisible: 12, tokenChunks: 10, outputTokens: 12, source: 'usage', errorEvent: false, inputTokens: 18, cachedTokens: 16, reasoningTokens: 4 },
  { file: 'vllm-responses-stream-midstream-error-reconstructed.sse', path: '/v1/responses', firstToken: 4, firstVisible: 12, tokenChunks: 6, outputTokens: 6, source: 'chunks', errorEvent: true, inputTokens: 0, cachedTokens: 0, reasoningTokens: 0 },
  { file: 'openai-responses-stream-failed-synthetic.sse', path: '/v1/responses', firstToken: 4, firstVisible: 12, tokenChunks: 6, outputTokens: 6, source: 'chunks', errorEvent: true, inputTokens: 0, cachedTokens: 0, reasoningTokens: 0 },
  { file: 'vllm-responses-stream-function-call-reconstructed.sse', path: '/v1/responses', firstToken: 3, firstVisible: 3, tokenChunks: 3, outputTokens: 9, source: 'usage', errorEvent: false, inputTokens: 61, cachedTokens: 0, reasoningTokens: 0 },
];

/** Byte offsets where each event of a typed stream starts (its `event:` line), for one event per write. */
export function typedEventBoundaries(bytes: Buffer): number[] {
  const out: number[] = [];
  const text = bytes.toString('latin1');
  const re = /\n(?=event:)/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(text))) out.push(m.index + 1);
  return out;
}

/** Non-streamed bodies captured from llama-server: what their usage says. */
export const TYPED_BODIES = [
  { file: 'llama-server-messages-nonstream.http', path: '/v1/messages', inputTokens: 34, outputTokens: 12, cachedTokens: 33 },
  { file: 'llama-server-responses-nonstream.http', path: '/v1/responses', inputTokens: 34, outputTokens: 12, cachedTokens: 33 },
] as const;
