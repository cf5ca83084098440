/**
 * Reading an OpenAI generation request body: the model and stream flag (for labels and the
 * metering mode), and injecting stream_options.include_usage when the client did not ask.
 * Whatever cannot be read is forwarded unchanged: the upstream decides what is valid.
 */

export const MAX_MODEL_LENGTH = 256;
const INJECTED = Buffer.from('"stream_options":{"include_usage":true},');

export interface GenerationRequest {
  body: Buffer;
  model: string;
  stream: boolean;
  /** We added include_usage: the usage-only chunk must be hidden from the client. */
  injected: boolean;
  /** The body is not a JSON object; metering of this request is off. */
  unreadable: boolean;
  /** `background: true` (the Responses API): the engine queues the request and answers before generating. */
  background: boolean;
}

/**
 * Bodies this large are scanned for the three fields infermeter reads instead of being
 * decoded and parsed whole: a long prompt would otherwise hold the proxy thread (and every
 * other stream's next chunk) for a quarter of a millisecond per 140 kB.
 */
export const SCAN_FROM_BYTES = 16 * 1024;
const FIELDS = ['model', 'stream', 'stream_options', 'background'] as const;

export function readGenerationRequest(raw: Buffer, injectUsage: boolean): GenerationRequest {
  let o = raw.length >= SCAN_FROM_BYTES ? scanTopLevel(raw, FIELDS) : null;
  if (o === null || (o['stream'] === true && injectUsage && needsMerge(o['stream_options']))) {
    // Small bodies, bodies the scan cannot vouch for, and the rare merge (which re-serializes
    // the whole body) take the full parse.
    let doc: unknown;
    try {
      doc = JSON.parse(raw.toString('utf8'));
    } catch {
      return { body: raw, model: '', stream: false, injected: false, unreadable: true, background: false };
    }
    if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) {
      return { body: raw, model: '', stream: false, injected: false, unreadable: true, background: false };
    }
    o = doc as Record<string, unknown>;
  }
  const model = typeof o['model'] === 'string' ? o['model'].slice(0, MAX_MODEL_LENGTH) : '';
  const stream = o['stream'] === true;
  const background = o['background'] === true;
  if (!stream || !injectUsage) return { body: raw, model, stream, injected: false, unreadable: false, background };
  const options = o['stream_options'];
  if (options === undefined) {
    // Splice the option in right after the opening brace: every other byte stays the client's.
    // The object has at least the stream key, so a key always follows the inserted comma.
    const brace = raw.indexOf(0x7b);
    const body = Buffer.concat([raw.subarray(0, brace + 1), INJECTED, raw.subarray(brace + 1)]);
    return { body, model, stream, injected: true, unreadable: false, background };
  }
  if (!needsMerge(options)) return { body: raw, model, stream, injected: false, unreadable: false, background };
  // An explicit null, or options without include_usage: rewrite the body (a spliced key would
  // lose to the client's own, later one: the last duplicate wins in JSON).
  const merged = { ...o, stream_options: { ...((options ?? {}) as object), include_usage: true } };
  return { body: Buffer.from(JSON.stringify(merged)), model, stream, injected: true, unreadable: false, background };
}

/** stream_options that is null, or an object without include_usage: true: it must be merged into. */
function needsMerge(options: unknown): boolean {
  if (options === null) return true;
  return options !== undefined && typeof options === 'object' && !Array.isArray(options) && (options as Record<string, unknown>)['include_usage'] !== true;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * The values of the named top-level keys of a JSON object, found by walking its top level
 * and jumping over every string with a native search for the closing quote, so the prompt
 * (nearly all of a long body) is never decoded. Only the named values are parsed; the last
 * of duplicate keys wins, as in JSON.parse. Returns null for anything that is not one
 * well-formed-looking top-level object (the caller then parses the whole body and decides),
 * so a body this accepts and JSON.parse would not can only be malformed inside a value it
 * skipped, which the upstream rejects as it would have anyway.
 */
export function scanTopLevel(buf: Buffer, names: readonly string[]): Record<string, unknown> | null {
  const out: Record<string, unknown> = {};
  let pos = skipWs(buf, 0);
  if (buf[pos] !== 0x7b) return null;
  pos = skipWs(buf, pos + 1);
  if (buf[pos] === 0x7d) return skipWs(buf, pos + 1) === buf.length ? out : null;
  for (;;) {
    if (buf[pos] !== QUOTE) return null;
    const keyEnd = stringEnd(buf, pos + 1);
    if (keyEnd < 0) return null;
    const rawKey = buf.toString('utf8', pos + 1, keyEnd);
    let key = rawKey;
    if (rawKey.includes('\\')) {
      try {
        key = JSON.parse(`"${rawKey}"`) as string;
      } catch {
        return null;
      }
    }
    pos = skipWs(buf, keyEnd + 1);
    if (buf[pos] !== 0x3a) return null;
    const start = skipWs(buf, pos + 1);
    const end = valueEnd(buf, start);
    if (end < 0) return null;
    if (names.includes(key)) {
      try {
        out[key] = JSON.parse(buf.toString('utf8', start, end));
      } catch {
        return null;
      }
    }
    pos = skipWs(buf, end);
    if (buf[pos] === 0x2c) {
      pos = skipWs(buf, pos + 1);
      continue;
    }
    if (buf[pos] !== 0x7d) return null;
    return skipWs(buf, pos + 1) === buf.length ? out : null;
  }
}

function skipWs(buf: Buffer, pos: number): number {
  let c = buf[pos];
  while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = buf[++pos];
  return pos;
}

/** Index of the quote that closes a string whose content starts at `from`; -1 if none. */
function stringEnd(buf: Buffer, from: number): number {
  for (;;) {
    const q = buf.indexOf(QUOTE, from);
    if (q < 0) return -1;
    let k = q - 1;
    while (buf[k] === BACKSLASH) k--;
    // An even run of backslashes escapes each other, not the quote.
    if ((q - 1 - k) % 2 === 0) return q;
    from = q + 1;
  }
}

/** Index just past the JSON value starting at `pos`; -1 if it does not end well. */
function valueEnd(buf: Buffer, pos: number): number {
  const c = buf[pos];
  if (c === QUOTE) {
    const e = stringEnd(buf, pos + 1);
    return e < 0 ? -1 : e + 1;
  }
  if (c === 0x7b || c === 0x5b) {
    // Nested object or array: follow brackets, jumping over strings.
    const closers: number[] = [];
    for (let i = pos; i < buf.length; i++) {
      const b = buf[i];
      if (b === QUOTE) {
        const e = stringEnd(buf, i + 1);
        if (e < 0) return -1;
        i = e;
      } else if (b === 0x7b) closers.push(0x7d);
      else if (b === 0x5b) closers.push(0x5d);
      else if (b === 0x7d || b === 0x5d) {
        if (closers.pop() !== b) return -1;
        if (closers.length === 0) return i + 1;
      }
    }
    return -1;
  }
  // A number, true, false or null: up to the next delimiter.
  let i = pos;
  for (; i < buf.length; i++) {
    const b = buf[i];
    if (b === 0x2c || b === 0x7d || b === 0x5d || b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09) break;
  }
  return i > pos ? i : -1;
}
