/**
 * What one parsed OpenAI streaming event says, as far as metering cares. Pure; tested
 * table-driven on every captured fixture.
 */

export interface EventFacts {
  /** Carries a generated token of any kind: content, reasoning, reasoning_content, tool calls, text. */
  token: boolean;
  /** Carries visible output: content, text or tool calls (not reasoning). */
  visible: boolean;
  /** usage.prompt_tokens / completion_tokens when present (-1 when absent). */
  promptTokens: number;
  completionTokens: number;
  /** usage.prompt_tokens_details.cached_tokens / usage.completion_tokens_details.reasoning_tokens (-1 when absent). */
  cachedTokens: number;
  reasoningTokens: number;
  /** An `{"error": ...}` event. */
  error: boolean;
  /** A usage-only chunk (`choices: []` plus usage): what include_usage adds at the end. */
  usageOnly: boolean;
  /** Carries a tool call (chat tool_calls / function_call, Messages input_json_delta, Responses function-call arguments). */
  tool: boolean;
  /** The stream's own end: chat's `[DONE]`, Messages' message_stop, Responses' response.completed / incomplete / failed. */
  terminal: boolean;
}

/** Facts that say nothing: the start of every reading, full parse or byte scan. */
export function emptyFacts(): EventFacts {
  return { token: false, visible: false, promptTokens: -1, completionTokens: -1, cachedTokens: -1, reasoningTokens: -1, error: false, usageOnly: false, tool: false, terminal: false };
}

/** Makes `f` say nothing again, in place (the byte scanners reuse one facts object). */
export function resetFacts(f: EventFacts): void {
  f.token = false;
  f.visible = false;
  f.promptTokens = -1;
  f.completionTokens = -1;
  f.cachedTokens = -1;
  f.reasoningTokens = -1;
  f.error = false;
  f.usageOnly = false;
  f.tool = false;
  f.terminal = false;
}

type Obj = Record<string, unknown>;

function nonEmpty(v: unknown): boolean {
  if (typeof v === 'string') return v.length > 0;
  if (Array.isArray(v)) return v.length > 0; // content parts, tool_calls
  return false;
}

/** A number inside one of usage's `*_details` objects (vLLM sends `null` when the option is off), -1 when absent. */
function detail(details: unknown, key: string): number {
  if (!details || typeof details !== 'object') return -1;
  const v = (details as Obj)[key];
  return typeof v === 'number' ? v : -1;
}

export function eventFacts(doc: unknown): EventFacts {
  const facts = emptyFacts();
  if (doc === null || typeof doc !== 'object') return facts;
  const o = doc as Obj;
  if (o['error'] !== undefined && o['error'] !== null) facts.error = true;
  const choices = o['choices'];
  if (Array.isArray(choices)) {
    for (const c of choices as Obj[]) {
      if (!c || typeof c !== 'object') continue;
      const d = (c['delta'] ?? c['message']) as Obj | undefined;
      const tool = d !== undefined && d !== null && (nonEmpty(d['tool_calls']) || d['function_call'] != null);
      const visible = nonEmpty(c['text']) || tool || (d !== undefined && d !== null && nonEmpty(d['content']));
      const reasoning = d !== undefined && d !== null && (nonEmpty(d['reasoning']) || nonEmpty(d['reasoning_content']));
      if (tool) facts.tool = true;
      if (visible) facts.visible = true;
      if (visible || reasoning) facts.token = true;
    }
  }
  const usage = o['usage'] as Obj | null | undefined;
  if (usage && typeof usage === 'object') {
    if (typeof usage['prompt_tokens'] === 'number') facts.promptTokens = usage['prompt_tokens'];
    if (typeof usage['completion_tokens'] === 'number') facts.completionTokens = usage['completion_tokens'];
    facts.cachedTokens = detail(usage['prompt_tokens_details'], 'cached_tokens');
    facts.reasoningTokens = detail(usage['completion_tokens_details'], 'reasoning_tokens');
    if (Array.isArray(choices) && choices.length === 0) facts.usageOnly = true;
  }
  return facts;
}
