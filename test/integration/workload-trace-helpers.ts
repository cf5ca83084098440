/** Shared by the workload trace tests: sending a request of each API and reading what the client saw, reading the trace. */
import { existsSync, readFileSync } from 'node:fs';
import { request, type Dispatcher } from 'undici';

export type Api = 'chat' | 'completions' | 'messages' | 'responses';
export const APIS: readonly Api[] = ['chat', 'completions', 'messages', 'responses'];
const PATHS: Record<Api, string> = { chat: '/v1/chat/completions', completions: '/v1/completions', messages: '/v1/messages', responses: '/v1/responses' };

/** A request body of `api` with a system part and a user part (completions: one prompt, system first). */
export function body(api: Api, model: string, system: string, user: string, stream: boolean, maxTokens: number): Record<string, unknown> {
  switch (api) {
    case 'chat':
      return { model, stream, max_tokens: maxTokens, ...(stream ? { stream_options: { include_usage: true } } : {}), messages: [{ role: 'system', content: system }, { role: 'user', content: user }] };
    case 'completions':
      return { model, stream, max_tokens: maxTokens, ...(stream ? { stream_options: { include_usage: true } } : {}), prompt: system + user };
    case 'messages':
      return { model, stream, max_tokens: maxTokens, system, messages: [{ role: 'user', content: user }] };
    case 'responses':
      return { model, stream, max_output_tokens: maxTokens, instructions: system, input: user };
  }
}

export interface Sent {
  api: Api;
  stream: boolean;
  /** Date.now() just before the request went out. */
  sentAt: number;
  /** Date.now() once the whole answer was read. */
  doneAt: number;
  status: number;
  input: number;
  output: number;
}

/** Sends one request and reads the usage the client saw, streamed or not. */
export async function send(base: string, api: Api, payload: Record<string, unknown>, headers: Record<string, string> = {}, dispatcher?: Dispatcher): Promise<Sent> {
  const stream = payload['stream'] === true;
  const sentAt = Date.now();
  const res = await request(base + PATHS[api], { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(payload), ...(dispatcher ? { dispatcher } : {}) });
  const text = await res.body.text();
  const doneAt = Date.now();
  const docs = stream ? text.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).filter((d) => d !== '[DONE]').map((d) => JSON.parse(d) as Record<string, any>) : [JSON.parse(text) as Record<string, any>];
  let input = -1;
  let output = -1;
  for (const d of docs) {
    const u = d['usage'] ?? d['message']?.['usage'] ?? d['response']?.['usage'];
    if (!u) continue;
    if (u['prompt_tokens'] !== undefined) input = u['prompt_tokens'];
    if (u['completion_tokens'] !== undefined) output = u['completion_tokens'];
    // Anthropic's input_tokens leaves out the tokens read from or written to its cache: the prompt is the sum.
    if (u['input_tokens'] !== undefined) input = u['input_tokens'] + (api === 'messages' ? (u['cache_read_input_tokens'] ?? 0) + (u['cache_creation_input_tokens'] ?? 0) : 0);
    if (u['output_tokens'] !== undefined) output = u['output_tokens'];
  }
  return { api, stream, sentAt, doneAt, status: res.statusCode, input, output };
}

export interface Line {
  timestamp: number;
  input_length: number;
  output_length: number;
  hash_ids: number[];
  input_length_source: string;
  model: string;
  api: Api;
  stream: boolean;
  outcome: string;
  upstream: string | null;
  max_tokens: number | null;
  cached_input_tokens: number | null;
  reasoning_tokens: number | null;
  ttft_ms: number | null;
  tpot_ms: number | null;
  e2e_ms: number | null;
  session: string | null;
}

export function readLines(file: string): Line[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Line);
}

/** Polls the trace until it holds `n` lines. */
export async function waitForLines(file: string, n: number, timeoutMs = 15_000): Promise<Line[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const lines = readLines(file);
    if (lines.length >= n) return lines;
    if (Date.now() > deadline) throw new Error(`the trace has ${lines.length} lines, ${n} expected`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The leading ids two lines share. */
export function sharedLead(a: readonly number[], b: readonly number[]): number {
  let k = 0;
  while (k < a.length && k < b.length && a[k] === b[k]) k++;
  return k;
}
