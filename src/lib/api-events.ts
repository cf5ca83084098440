/**
 * The generation APIs whose streams are made of typed events (`{"type": ...}` in every
 * `data:` line): the Anthropic Messages API and the OpenAI Responses API. Each is a row of
 * data: which event types carry a generated token (and where), which carry usage (and where),
 * which are errors. The facts read from them are the same EventFacts the chat scanner fills,
 * so the meter and the record stay one for all four APIs. Pure; the byte scan
 * (event-scan-typed.ts) must say exactly what `typedEventFacts(row, JSON.parse(...))` says.
 */
import { emptyFacts, type EventFacts } from './events.js';

/** Where one token event's text lies: `delta` (a string), or `delta.<field>` when the delta is an object of a sub-type. */
export interface TokenSpec {
  /** Root key holding the text (Responses: `delta`), or, with `sub`, the key inside the `delta` object. */
  field: string;
  /** The `delta.type` this spec applies to (Messages' content_block_delta); null: the root key is the string. */
  sub: string | null;
  /** Visible output (TTFO): text and tool input, not reasoning. */
  visible: boolean;
  /** A tool call's input (its silence is the tool_call phase's). */
  tool?: boolean;
}

/** Where one usage-bearing event keeps its usage object, and whether its output count is final. */
export interface UsageSpec {
  path: readonly string[];
  /** message_start's output_tokens is a placeholder (0 or 1): only message_delta's counts. */
  output: boolean;
}

/** How an API names its usage fields. Input tokens are the sum of `input` (Anthropic counts cache reads apart). */
export interface UsageFields {
  input: readonly string[];
  output: string;
  /** [key] at the usage object's top level, or [details object, key]. */
  cached: readonly string[];
  reasoning: readonly string[] | null;
}

export interface TypedApi {
  /** Names the row in a malformed-row error only (event-scan-typed.ts); the meter picks rows by route. */
  name: 'messages' | 'responses';
  /** event type → the token specs it may carry (several for Messages' content_block_delta, keyed by sub-type). */
  tokens: ReadonlyMap<string, readonly TokenSpec[]>;
  usage: ReadonlyMap<string, UsageSpec>;
  errors: ReadonlySet<string>;
  /** The event types that end a stream as the API defines it: a stream closed without one ended early (no_terminal_event). */
  terminal: ReadonlySet<string>;
  fields: UsageFields;
  /** The usage object of a non-streamed body. */
  bodyUsage: readonly string[];
}

export const MESSAGES_API: TypedApi = {
  name: 'messages',
  tokens: new Map([
    ['content_block_delta', [
      { field: 'text', sub: 'text_delta', visible: true },
      { field: 'thinking', sub: 'thinking_delta', visible: false },
      { field: 'partial_json', sub: 'input_json_delta', visible: true, tool: true },
    ]],
  ]),
  usage: new Map([
    ['message_start', { path: ['message', 'usage'], output: false }],
    ['message_delta', { path: ['usage'], output: true }],
  ]),
  errors: new Set(['error']),
  terminal: new Set(['message_stop']),
  fields: { input: ['input_tokens', 'cache_read_input_tokens', 'cache_creation_input_tokens'], output: 'output_tokens', cached: ['cache_read_input_tokens'], reasoning: null },
  bodyUsage: ['usage'],
};

export const RESPONSES_API: TypedApi = {
  name: 'responses',
  tokens: new Map([
    ['response.output_text.delta', [{ field: 'delta', sub: null, visible: true }]],
    ['response.function_call_arguments.delta', [{ field: 'delta', sub: null, visible: true, tool: true }]],
    ['response.reasoning_text.delta', [{ field: 'delta', sub: null, visible: false }]],
    ['response.reasoning_summary_text.delta', [{ field: 'delta', sub: null, visible: false }]],
  ]),
  usage: new Map([
    ['response.completed', { path: ['response', 'usage'], output: true }],
    ['response.incomplete', { path: ['response', 'usage'], output: true }],
    ['response.failed', { path: ['response', 'usage'], output: true }],
  ]),
  errors: new Set(['error', 'response.failed']),
  terminal: new Set(['response.completed', 'response.incomplete', 'response.failed']),
  fields: { input: ['input_tokens'], output: 'output_tokens', cached: ['input_tokens_details', 'cached_tokens'], reasoning: ['output_tokens_details', 'reasoning_tokens'] },
  bodyUsage: ['usage'],
};

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function at(doc: unknown, path: readonly string[]): unknown {
  let v = doc;
  for (const k of path) {
    if (!isObj(v)) return undefined;
    v = v[k];
  }
  return v;
}

function count(v: unknown): number {
  return typeof v === 'number' ? v : -1;
}

/** Reads an API's usage object into the facts. */
export function readUsage(api: TypedApi, usage: unknown, output: boolean, facts: EventFacts): void {
  if (!isObj(usage)) return;
  const f = api.fields;
  const first = count(usage[f.input[0]!]);
  if (first >= 0) {
    let sum = first;
    // (`<=` would add max(0, count(usage[undefined])) = 0: the same sum.)
    for (let i = 1; i < f.input.length; i++) sum += Math.max(0, count(usage[f.input[i]!]));
    facts.promptTokens = sum;
  }
  if (output) facts.completionTokens = count(usage[f.output]);
  facts.cachedTokens = count(at(usage, f.cached));
  if (f.reasoning) facts.reasoningTokens = count(at(usage, f.reasoning));
}

/** What one typed streaming event says, as far as metering cares. */
export function typedEventFacts(api: TypedApi, doc: unknown): EventFacts {
  const facts = emptyFacts();
  if (!isObj(doc)) return facts;
  const type = doc['type'];
  // Without this early return a non-string type would match no row either: it only saves the lookups.
  if (typeof type !== 'string') return facts;
  if (api.errors.has(type)) facts.error = true;
  if (api.terminal.has(type)) facts.terminal = true;
  const specs = api.tokens.get(type);
  if (specs) {
    for (const s of specs) {
      let text: unknown;
      if (s.sub === null) text = doc[s.field];
      else {
        const d = doc['delta'];
        if (!isObj(d) || d['type'] !== s.sub) continue;
        text = d[s.field];
      }
      if (typeof text === 'string' && text.length > 0) {
        facts.token = true;
        if (s.visible) facts.visible = true;
        if (s.tool) facts.tool = true;
      }
    }
  }
  const u = api.usage.get(type);
  if (u) readUsage(api, at(doc, u.path), u.output, facts);
  return facts;
}

/** A non-streamed body: its usage (final). */
export function typedBodyFacts(api: TypedApi, doc: unknown): EventFacts {
  const facts = emptyFacts();
  readUsage(api, at(doc, api.bodyUsage), true, facts);
  return facts;
}
