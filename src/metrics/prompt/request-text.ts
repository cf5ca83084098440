/**
 * What the prompt of a generation request is, per API: the chat messages (the form a chat
 * template takes), or the completions prompt (a string, or token ids), and the output limit
 * the client asked for. Pure: a body in, plain data out; it runs on the hashing thread, never
 * on the proxy loop. The Messages API's `system` and the Responses API's `instructions` become
 * a leading system message, as engines that serve those APIs render them.
 */
import type { ApiName } from '../../record/routes.js';

export interface ChatMessage {
  role: string;
  content: string;
}

export interface PromptRequest {
  api: ApiName;
  /** chat, messages, responses: the conversation; null for completions. */
  messages: ChatMessage[] | null;
  /** The tool definitions as sent (chat templates render them); null when none. */
  tools: unknown[] | null;
  /** completions: the prompt text (null when it is token ids). */
  prompt: string | null;
  /** completions: the prompt as token ids, when the client sent ids. */
  promptIds: number[] | null;
  /** The output limit asked for (max_tokens, max_completion_tokens, max_output_tokens); null when none. */
  maxTokens: number | null;
  /** The client asked for a stream (`stream: true`). */
  stream: boolean;
}

type Obj = Record<string, unknown>;

/** null: not a JSON object, or no prompt this API knows. */
export function readPromptRequest(api: ApiName, body: Uint8Array): PromptRequest | null {
  let doc: unknown;
  try {
    doc = JSON.parse(Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8'));
  } catch {
    return null;
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) return null;
  const b = doc as Obj;
  const tools = Array.isArray(b['tools']) && b['tools'].length > 0 ? (b['tools'] as unknown[]) : null;
  const base = { api, tools, prompt: null, promptIds: null, messages: null, stream: b['stream'] === true };
  switch (api) {
    case 'completions': {
      let p = b['prompt'];
      if (Array.isArray(p) && p.length === 1 && (typeof p[0] === 'string' || Array.isArray(p[0]))) p = p[0];
      const maxTokens = count(b['max_tokens']);
      if (typeof p === 'string') return { ...base, prompt: p, maxTokens };
      if (Array.isArray(p) && p.length > 0 && p.every((t) => Number.isInteger(t) && t >= 0)) return { ...base, promptIds: p as number[], maxTokens };
      return null;
    }
    case 'chat': {
      const messages = chatMessages(b['messages']);
      return messages ? { ...base, messages, maxTokens: count(b['max_completion_tokens']) ?? count(b['max_tokens']) } : null;
    }
    case 'messages': {
      const turns = chatMessages(b['messages']);
      if (!turns) return null;
      const system = contentText(b['system']);
      return { ...base, messages: system === '' ? turns : [{ role: 'system', content: system }, ...turns], maxTokens: count(b['max_tokens']) };
    }
    case 'responses': {
      const input = b['input'];
      const items = typeof input === 'string' ? [{ role: 'user', content: input }] : chatMessages(input);
      if (!items) return null;
      const instructions = typeof b['instructions'] === 'string' && b['instructions'] !== '' ? [{ role: 'system', content: b['instructions'] }] : [];
      return { ...base, messages: [...instructions, ...items], maxTokens: count(b['max_output_tokens']) };
    }
  }
}

function count(v: unknown): number | null {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : null;
}

/** A list of messages or items; an item without a role (a Responses function_call_output, say) is a `tool` turn. */
function chatMessages(v: unknown): ChatMessage[] | null {
  if (!Array.isArray(v) || v.length === 0) return null;
  const out: ChatMessage[] = [];
  for (const m of v) {
    if (m === null || typeof m !== 'object') return null;
    const o = m as Obj;
    const role = typeof o['role'] === 'string' ? o['role'] : 'tool';
    const content = o['content'] !== undefined ? o['content'] : (o['output'] ?? o['arguments'] ?? '');
    out.push({ role, content: contentText(content) });
  }
  return out;
}

/** A content string, or the text of its parts in order (a part that is not text counts as `[media]`), joined by newlines. */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return content === undefined || content === null ? '' : JSON.stringify(content);
  return content.map((p) => {
    if (p === null || typeof p !== 'object') return String(p);
    const o = p as Obj;
    if (typeof o['text'] === 'string') return o['text'];
    if (o['type'] === 'tool_result') return contentText(o['content']);
    if (o['type'] === 'tool_use') return JSON.stringify(o['input'] ?? {});
    return '[media]';
  }).join('\n');
}

/**
 * The text the characters cut hashes (docs/workload-trace.md, "Block ids"): the completions
 * prompt, or each message as `<|role|>\n` + text + `\n`, then the tools as JSON, then
 * `<|assistant|>\n`. Null for a prompt of token ids (those are cut as tokens, exactly).
 */
export function charsText(p: PromptRequest): string | null {
  if (p.messages === null) return p.prompt;
  let text = '';
  for (const m of p.messages) text += `<|${m.role}|>\n${m.content}\n`;
  if (p.tools) text += JSON.stringify(p.tools);
  return text + '<|assistant|>\n';
}
