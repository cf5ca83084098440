/**
 * README's "Every API" table, the Messages and Responses rows, read off a stream's text by
 * hand: each `data:` line parsed, and README's event types and fields looked up by name. Tests
 * compare the product's rows (src/lib/api-events.ts) and the meter against these figures, so
 * a wrong row fails; nothing here is built from those rows.
 */

export type TypedApiName = 'messages' | 'responses';

export interface ReadmeFigures {
  /** The `data:` events of the stream, in order. */
  events: Record<string, unknown>[];
  /** Index (in `events`) of the first event README counts for TTFT, and for TTFO; -1: none. */
  firstToken: number;
  firstOutput: number;
  tokenEvents: number;
  /** -1: the stream does not say. */
  input: number;
  output: number;
  cached: number;
  reasoning: number;
  /** A stream error event (README's last column). */
  error: boolean;
  /** The distinct `"model":"…"` values written in the text (each typed fixture names one). */
  models: string[];
}

type Obj = Record<string, any>;

const nonEmpty = (v: unknown): boolean => typeof v === 'string' && v !== '';
const num = (v: unknown): number => (typeof v === 'number' ? v : -1);

/** The data events of an SSE text (the fixture's bytes as written). */
export function dataEvents(text: string): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const line of text.split(/\r?\n/)) {
    const m = /^data: ?(.*)$/.exec(line);
    if (m) out.push(JSON.parse(m[1]!) as Record<string, unknown>);
  }
  return out;
}

/** Messages' input: input_tokens + cache_read_input_tokens + cache_creation_input_tokens (-1 without input_tokens). */
function messagesInput(u: Obj): number {
  if (typeof u['input_tokens'] !== 'number') return -1;
  return u['input_tokens'] + Math.max(0, num(u['cache_read_input_tokens'])) + Math.max(0, num(u['cache_creation_input_tokens']));
}

/** A token event by README: [counts for TTFT, counts for TTFO]. */
function token(api: TypedApiName, e: Obj): [boolean, boolean] {
  if (api === 'messages') {
    // content_block_delta with text_delta.text, thinking_delta.thinking or input_json_delta.partial_json; TTFO excludes thinking_delta.
    if (e['type'] !== 'content_block_delta') return [false, false];
    const d = (e['delta'] ?? {}) as Obj;
    if (d['type'] === 'text_delta' && nonEmpty(d['text'])) return [true, true];
    if (d['type'] === 'input_json_delta' && nonEmpty(d['partial_json'])) return [true, true];
    if (d['type'] === 'thinking_delta' && nonEmpty(d['thinking'])) return [true, false];
    return [false, false];
  }
  // response.output_text.delta, response.reasoning_text.delta, response.reasoning_summary_text.delta,
  // response.function_call_arguments.delta; TTFO excludes both reasoning deltas.
  if (!nonEmpty(e['delta'])) return [false, false];
  if (e['type'] === 'response.output_text.delta' || e['type'] === 'response.function_call_arguments.delta') return [true, true];
  if (e['type'] === 'response.reasoning_text.delta' || e['type'] === 'response.reasoning_summary_text.delta') return [true, false];
  return [false, false];
}

export function readmeFigures(api: TypedApiName, text: string): ReadmeFigures {
  const events = dataEvents(text);
  const f: ReadmeFigures = { events, firstToken: -1, firstOutput: -1, tokenEvents: 0, input: -1, output: -1, cached: -1, reasoning: -1, error: false, models: [...new Set([...text.matchAll(/"model":"([^"]*)"/g)].map((m) => m[1]!))] };
  events.forEach((e: Obj, i) => {
    const [ttft, ttfo] = token(api, e);
    if (ttft) {
      f.tokenEvents++;
      if (f.firstToken < 0) f.firstToken = i;
    }
    if (ttfo && f.firstOutput < 0) f.firstOutput = i;
    if (api === 'messages') {
      if (e['type'] === 'message_start') {
        // input_tokens + cache_read_input_tokens + cache_creation_input_tokens; cache_read_input_tokens is cached_input.
        const u = (e['message']?.usage ?? {}) as Obj;
        f.input = messagesInput(u);
        f.cached = num(u['cache_read_input_tokens']);
      }
      if (e['type'] === 'message_delta') f.output = num(e['usage']?.output_tokens);
      if (e['type'] === 'error') f.error = true;
    } else {
      if (['response.completed', 'response.incomplete', 'response.failed'].includes(e['type'])) {
        const u = e['response']?.usage as Obj | null | undefined;
        if (u) {
          f.input = num(u['input_tokens']);
          f.output = num(u['output_tokens']);
          f.cached = num(u['input_tokens_details']?.cached_tokens);
          f.reasoning = num(u['output_tokens_details']?.reasoning_tokens);
        }
      }
      if (e['type'] === 'error' || e['type'] === 'response.failed') f.error = true;
    }
  });
  return f;
}

/** A non-streamed body by README ("a body: usage.output_tokens"; input as the stream's). */
export function readmeBodyFigures(api: TypedApiName, body: Obj): { input: number; output: number; cached: number; reasoning: number } {
  const u = (body['usage'] ?? {}) as Obj;
  if (api === 'messages') {
    return {
      input: messagesInput(u),
      output: num(u['output_tokens']), cached: num(u['cache_read_input_tokens']), reasoning: -1,
    };
  }
  return { input: num(u['input_tokens']), output: num(u['output_tokens']), cached: num(u['input_tokens_details']?.cached_tokens), reasoning: num(u['output_tokens_details']?.reasoning_tokens) };
}

/** The typed fixtures, by the API their name says. */
export function typedApiOf(file: string): TypedApiName | null {
  return file.includes('-messages-') ? 'messages' : file.includes('-responses-') ? 'responses' : null;
}
