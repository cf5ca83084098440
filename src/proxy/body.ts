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
}

export function readGenerationRequest(raw: Buffer, injectUsage: boolean): GenerationRequest {
  let doc: unknown;
  try {
    doc = JSON.parse(raw.toString('utf8'));
  } catch {
    return { body: raw, model: '', stream: false, injected: false, unreadable: true };
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) {
    return { body: raw, model: '', stream: false, injected: false, unreadable: true };
  }
  const o = doc as Record<string, unknown>;
  const model = typeof o['model'] === 'string' ? o['model'].slice(0, MAX_MODEL_LENGTH) : '';
  const stream = o['stream'] === true;
  if (!stream || !injectUsage) return { body: raw, model, stream, injected: false, unreadable: false };
  const options = o['stream_options'];
  if (options === undefined || options === null) {
    // Splice the option in right after the opening brace: every other byte stays the client's.
    // The object has at least the stream key, so a key always follows the inserted comma.
    const brace = raw.indexOf(0x7b);
    const body = Buffer.concat([raw.subarray(0, brace + 1), INJECTED, raw.subarray(brace + 1)]);
    return { body, model, stream, injected: true, unreadable: false };
  }
  if (typeof options !== 'object' || Array.isArray(options)) return { body: raw, model, stream, injected: false, unreadable: false };
  if ((options as Record<string, unknown>)['include_usage'] === true) return { body: raw, model, stream, injected: false, unreadable: false };
  const merged = { ...o, stream_options: { ...(options as object), include_usage: true } };
  return { body: Buffer.from(JSON.stringify(merged)), model, stream, injected: true, unreadable: false };
}
