/**
 * What a response says about itself for the span (gen_ai.response.model and
 * gen_ai.response.finish_reasons), read off the bytes of the few events that need it: the
 * model from the first token event (once per request), finish reasons from events the byte
 * scan or the full parse looked at (a finish event never matches the token template, whose
 * finish_reason is null). Template-matched events, nearly all of a stream, cost nothing here.
 * Server-given strings, bounded in length and number; never content.
 */

const MODEL_KEY = Buffer.from('"model":"');
const FINISH_KEY = Buffer.from('"finish_reason":"');
const MAX_MODEL = 128;
const MAX_REASON = 32;
/** One per choice; n is small in practice. */
const MAX_REASONS = 8;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** The plain (escape-free) JSON string starting at `from`, up to `max` bytes, or null. */
function plainString(buf: Buffer, from: number, end: number, max: number): string | null {
  const limit = Math.min(end, from + max + 1);
  for (let q = from; q < limit; q++) {
    const c = buf[q]!;
    if (c === QUOTE) return q > from ? buf.toString('utf8', from, q) : null;
    if (c === BACKSLASH || c < 0x20) return null;
  }
  return null;
}

/**
 * The top-level `"model"` of an event. The first occurrence of the key in an OpenAI chunk is
 * the top-level one (id, object, created, model come before choices); a key with a space
 * after the colon is not found, and the span just has no response model.
 */
export function modelIn(buf: Buffer, start: number, end: number): string | null {
  const at = buf.indexOf(MODEL_KEY, start);
  if (at < 0 || at >= end) return null;
  return plainString(buf, at + MODEL_KEY.length, end, MAX_MODEL);
}

/** Adds every non-null `"finish_reason":"…"` of the event to `into` (distinct, bounded). */
export function finishReasonsIn(buf: Buffer, start: number, end: number, into: string[]): void {
  let from = start;
  while (into.length < MAX_REASONS) {
    const at = buf.indexOf(FINISH_KEY, from);
    if (at < 0 || at >= end) return;
    from = at + FINISH_KEY.length;
    const r = plainString(buf, from, end, MAX_REASON);
    if (r !== null && !into.includes(r)) into.push(r);
  }
}

/** The same facts from a parsed document (the full-parse path and non-streamed bodies). */
export function responseFactsOf(doc: unknown, into: string[]): string | null {
  if (doc === null || typeof doc !== 'object') return null;
  const o = doc as Record<string, unknown>;
  const choices = o['choices'];
  if (Array.isArray(choices)) {
    for (const c of choices as Record<string, unknown>[]) {
      const r = c && typeof c === 'object' ? c['finish_reason'] : null;
      if (typeof r === 'string' && r !== '' && into.length < MAX_REASONS && !into.includes(r)) into.push(r.slice(0, MAX_REASON));
    }
  }
  const model = o['model'];
  return typeof model === 'string' && model !== '' ? model.slice(0, MAX_MODEL) : null;
}
