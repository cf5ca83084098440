/**
 * Reading an OpenAI generation request the way vLLM does, as far as the simulator needs:
 * model, prompt (for its token count, prefix hashes and seed), max_tokens, streaming and
 * usage options, tools. Pure; rejections carry vLLM's status, type and message.
 */
import { estimateTokens, fnv1a, prng } from './text.js';
import type { SimOptions } from './options.js';
import type { Script } from './reply.js';
import type { ApiName } from '../record/routes.js';

export interface Generation {
  api: ApiName;
  model: string;
  stream: boolean;
  includeUsage: boolean;
  continuousUsage: boolean;
  promptText: string;
  promptTokens: number;
  maxTokens: number | null;
  minTokens: number;
  ignoreEos: boolean;
  seed: number | null;
  /** The function a tool call will name, when the request allows tool calls. */
  toolName: string | null;
  /** Responses' `background: true`: answered at once with a queued response. */
  background: boolean;
}

export class RequestError extends Error {
  constructor(readonly status: number, readonly type: string, message: string) {
    super(message);
  }
}

const bad = (message: string) => new RequestError(400, 'BadRequestError', message);

type Obj = Record<string, unknown>;

export function parseGeneration(api: ApiName, body: unknown, opts: SimOptions): Generation {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw bad('The request body must be a JSON object.');
  const b = body as Obj;
  const model = b['model'] === undefined || b['model'] === null ? opts.models[0]! : String(b['model']);
  if (!opts.models.includes(model)) throw new RequestError(404, 'NotFoundError', `The model \`${model}\` does not exist.`);
  const n = b['n'] ?? 1;
  if (n !== 1) throw bad('The simulator generates one choice per request (n must be 1).');
  const { text: promptText, tokens: promptTokens } = PROMPT[api](b);
  const maxTokens = api === 'messages' ? requiredCount(b['max_tokens'], 'max_tokens')
    : optionalCount(api === 'responses' ? b['max_output_tokens'] : (b['max_completion_tokens'] ?? b['max_tokens']), api === 'responses' ? 'max_output_tokens' : 'max_tokens', 1);
  if (promptTokens + (maxTokens ?? 0) > opts.maxModelLen) {
    throw bad(
      `This model's maximum context length is ${opts.maxModelLen} tokens. However, you requested ${promptTokens + (maxTokens ?? 0)} tokens ` +
        `(${promptTokens} in the messages, ${maxTokens ?? 0} in the completion). Please reduce the length of the messages or completion.`,
    );
  }
  const so = (b['stream_options'] ?? {}) as Obj;
  const stream = b['stream'] === true;
  // The Messages and Responses APIs always end a stream with usage.
  const includeUsage = stream && (api === 'messages' || api === 'responses' || so['include_usage'] === true);
  return {
    api, model, stream, promptText, promptTokens, maxTokens,
    includeUsage,
    continuousUsage: (api === 'chat' || api === 'completions') && includeUsage && so['continuous_usage_stats'] === true,
    minTokens: optionalCount(b['min_tokens'], 'min_tokens', 0) ?? 0,
    ignoreEos: b['ignore_eos'] === true,
    seed: typeof b['seed'] === 'number' ? b['seed'] : null,
    toolName: api === 'completions' ? null : toolName(api, b, opts),
    background: api === 'responses' && b['background'] === true,
  };
}

const PROMPT: Record<ApiName, (b: Obj) => { text: string; tokens: number }> = {
  chat: chatPrompt,
  completions: completionPrompt,
  messages: (b) => {
    const system = typeof b['system'] === 'string' ? b['system'] : contentText(b['system']);
    return chatPrompt({ ...b, messages: [...(system ? [{ role: 'system', content: system }] : []), ...(Array.isArray(b['messages']) ? (b['messages'] as Obj[]) : [])] });
  },
  responses: (b) => {
    const input = b['input'];
    const items = typeof input === 'string' ? [{ role: 'user', content: input }] : Array.isArray(input) ? (input as Obj[]) : [];
    const instructions = typeof b['instructions'] === 'string' ? [{ role: 'system', content: b['instructions'] }] : [];
    if (items.length === 0) throw bad('`input` must be a non-empty string or list of items.');
    return chatPrompt({ ...b, messages: [...instructions, ...items.map((i) => ({ role: i['role'] ?? 'user', content: i['content'] ?? i['output'] ?? '' }))] });
  },
};

function requiredCount(v: unknown, name: string): number {
  if (v === undefined || v === null) throw bad(`${name} is required.`);
  return optionalCount(v, name, 1)!;
}

/** The chat template's rendering, roughly: role markers and message texts, then tool definitions. */
function chatPrompt(b: Obj): { text: string; tokens: number } {
  const messages = b['messages'];
  if (!Array.isArray(messages) || messages.length === 0) throw bad('`messages` must be a non-empty list.');
  let text = '';
  for (const m of messages as Obj[]) {
    if (!m || typeof m !== 'object') throw bad('Each message must be an object.');
    text += `<|${String(m['role'])}|>\n${contentText(m['content'])}\n`;
  }
  if (Array.isArray(b['tools'])) text += JSON.stringify(b['tools']);
  text += '<|assistant|>\n';
  return { text, tokens: estimateTokens(text) };
}

function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((p: Obj) => (p && (p['type'] === 'text' || p['type'] === 'input_text') ? String(p['text']) : '[media]')).join('\n');
}

/** One string, or one list of token ids (then the count is exact). */
function completionPrompt(b: Obj): { text: string; tokens: number } {
  let p = b['prompt'];
  if (Array.isArray(p) && p.length === 1 && (typeof p[0] === 'string' || Array.isArray(p[0]))) p = p[0];
  if (typeof p === 'string' && p.length > 0) return { text: p, tokens: estimateTokens(p) };
  if (Array.isArray(p) && p.length > 0 && p.every((t) => typeof t === 'number')) return { text: p.join(','), tokens: p.length };
  throw bad('`prompt` must be one non-empty string or one list of token ids.');
}

function optionalCount(v: unknown, name: string, min: number): number | null {
  if (v === undefined || v === null) return null;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min) throw bad(`${name} must be an integer >= ${min}, got ${JSON.stringify(v)}.`);
  return v;
}

function toolName(api: ApiName, b: Obj, opts: SimOptions): string | null {
  if (opts.toolCalls === 'never') return null;
  const tools = Array.isArray(b['tools']) ? (b['tools'] as Obj[]) : [];
  const choice = b['tool_choice'];
  const none = choice === 'none' || (choice !== null && typeof choice === 'object' && (choice as Obj)['type'] === 'none');
  if (none || (tools.length === 0 && opts.toolCalls !== 'always')) return null;
  // Chat nests the name under `function`; Messages and Responses keep it on the tool (and on a named choice).
  const holder = (o: Obj | undefined) => (api === 'chat' ? (o?.['function'] as Obj | undefined) : o);
  const named = choice && typeof choice === 'object' ? holder(choice as Obj)?.['name'] : undefined;
  const first = holder(tools[0])?.['name'];
  return String(named ?? first ?? 'get_weather');
}

/**
 * Decides the reply: its length (max_tokens, else a natural length drawn in --output-tokens,
 * never past the context), how it ends, how much of it is reasoning. Seeded by --seed,
 * the request's `seed` and the prompt.
 */
export function planScript(gen: Generation, opts: SimOptions): Script {
  const rand = prng(fnv1a(gen.promptText, fnv1a(`${opts.seed}|${gen.seed ?? ''}|`)));
  const [lo, hi] = opts.outputTokens;
  const natural = Math.max(gen.minTokens, lo + Math.floor(rand() * (hi - lo + 1)), 1);
  const limit = gen.maxTokens ?? Math.max(1, opts.maxModelLen - gen.promptTokens);
  const byLimit = gen.ignoreEos || natural >= limit;
  const outputTokens = byLimit ? limit : natural;
  const tool = gen.toolName !== null;
  return {
    outputTokens,
    finish: byLimit ? 'length' : tool ? 'tool_calls' : 'stop',
    reasoningTokens: opts.reasoning !== null && !tool && gen.api !== 'completions' ? Math.floor((outputTokens - 1) * 0.4) : 0,
    tool,
    rand,
  };
}
