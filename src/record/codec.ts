/**
 * Request records in one flat buffer: how finished requests cross from a proxy loop to the
 * metrics side, whether that side is a thread of the same process (the ArrayBuffer is
 * transferred, not copied) or the primary of a cluster (the buffer crosses the IPC
 * channel as bytes). One batch costs one buffer and one message instead of a structured
 * clone of an object graph per request, on both ends.
 *
 * Layout (little-endian), per record:
 *   u8 outcome · u8 token source · u8 metering failure (255: none) · u8 flags (1 streamed, 2 gaps, 4 input tokens known, 8 model admitted, 16 terminal event)
 *   u16 status · f64 ttft · f64 ttfo · f64 e2e · u32 input tokens · u32 output tokens
 *   f64 startedAt · u32 in flight at start · i32 in flight at first token · i32 cached input tokens
 *   i32 reasoning tokens · u8 trace flags · u8 upstream index (255: none)
 *   f32 × 4 longest silence: before the first token, reasoning, tool call, content (-1: none)
 *   u32 request body bytes · f32 abort propagation (-1: none)
 *   str route · str operation · str model · str error type · str tenant · str trace id · str span id
 *   str parent span id · str response model · str finish reasons (u16 byte length, 0xffff: null; then UTF-8)
 *   [u32 gap count · f32 × count]
 * A batch is `u32 version · u32 record count · records`. New fields go at the end of a
 * record with a new version; the decoder refuses versions it does not know.
 */
import { METERING_FAILURES, OUTCOMES, TOKEN_SOURCES, type RequestRecord } from './record.js';

/** 3: response model and finish reasons (issue 16); 5: the upstream index (issue 26); 6: the terminal event and the silences (issue 49); 7: the body's bytes and the abort propagation (issue 49). */
export const CODEC_VERSION = 7;
const NONE = 255;
const NULL_STRING = 0xffff;
const HEADER = 8;
const FIXED = 4 + 2 + 24 + 8 + 8 + 16 + 1 + 1 + 16 + 8;
/** Strings per record, each with its u16 length. */
const STRINGS = 10;

const outcomeIndex = new Map<string, number>(OUTCOMES.map((o, i) => [o, i]));
const sourceIndex = new Map<string, number>(TOKEN_SOURCES.map((s, i) => [s, i]));
const failureIndex = new Map<string, number>(METERING_FAILURES.map((f, i) => [f, i]));

/** Appends records to one growing buffer; take() hands the bytes over and starts afresh. */
export class RecordEncoder {
  private buf: Buffer;
  private pos = HEADER;
  private n = 0;

  // The initial size only decides when the buffer first grows (mutation testing: equivalent).
  constructor(private readonly initialBytes = 16 * 1024) {
    this.buf = Buffer.allocUnsafe(initialBytes);
  }

  get count(): number {
    return this.n;
  }

  add(r: RequestRecord): void {
    const gaps = r.chunkGaps;
    const chars = r.route.length + r.operation.length + r.model.length + (r.errorType?.length ?? 0) + (r.tenant?.length ?? 0) + (r.traceId ? 64 : 0)
      + (r.responseModel?.length ?? 0) + (r.finishReasons?.length ?? 0);
    this.reserve(FIXED + 2 * STRINGS + 3 * chars + (gaps ? 4 + gaps.length * 4 : 0));
    const b = this.buf;
    let p = this.pos;
    b[p++] = outcomeIndex.get(r.outcome)!;
    b[p++] = sourceIndex.get(r.tokenSource)!;
    b[p++] = r.meteringFailure === null ? NONE : failureIndex.get(r.meteringFailure)!;
    b[p++] = (r.streamed ? 1 : 0) | (gaps ? 2 : 0) | (r.inputTokensKnown ? 4 : 0) | (r.modelAdmitted ? 8 : 0) | (r.terminal ? 16 : 0);
    p = b.writeUInt16LE(r.status, p);
    p = b.writeDoubleLE(r.ttft, p);
    p = b.writeDoubleLE(r.ttfo, p);
    p = b.writeDoubleLE(r.e2e, p);
    p = b.writeUInt32LE(r.inputTokens >>> 0, p);
    p = b.writeUInt32LE(r.outputTokens >>> 0, p);
    p = b.writeDoubleLE(r.startedAt, p);
    p = b.writeUInt32LE(r.inFlightAtStart >>> 0, p);
    p = b.writeInt32LE(r.inFlightAtFirstToken, p);
    p = b.writeInt32LE(r.cachedInputTokens, p);
    p = b.writeInt32LE(r.reasoningTokens, p);
    b[p++] = r.traceFlags;
    b[p++] = r.upstream < 0 ? NONE : r.upstream;
    p = b.writeFloatLE(r.silenceFirst, p);
    p = b.writeFloatLE(r.silenceReasoning, p);
    p = b.writeFloatLE(r.silenceTool, p);
    p = b.writeFloatLE(r.silenceContent, p);
    p = b.writeUInt32LE(r.requestBytes >>> 0, p);
    p = b.writeFloatLE(r.abortPropagation, p);
    p = writeString(b, p, r.route);
    p = writeString(b, p, r.operation);
    p = writeString(b, p, r.model);
    p = writeString(b, p, r.errorType);
    p = writeString(b, p, r.tenant);
    p = writeString(b, p, r.traceId);
    p = writeString(b, p, r.spanId);
    p = writeString(b, p, r.parentSpanId);
    p = writeString(b, p, r.responseModel);
    p = writeString(b, p, r.finishReasons);
    if (gaps) {
      p = b.writeUInt32LE(gaps.length, p);
      b.set(new Uint8Array(gaps.buffer, gaps.byteOffset, gaps.byteLength), p);
      p += gaps.byteLength;
    }
    this.pos = p;
    this.n++;
  }

  /** The batch so far as its own ArrayBuffer (safe to transfer), or null when empty. */
  take(): ArrayBuffer | null {
    if (this.n === 0) return null;
    this.buf.writeUInt32LE(CODEC_VERSION, 0);
    this.buf.writeUInt32LE(this.n, 4);
    const out = new ArrayBuffer(this.pos);
    new Uint8Array(out).set(this.buf.subarray(0, this.pos));
    this.pos = HEADER;
    this.n = 0;
    return out;
  }

  private reserve(bytes: number): void {
    // `<` for `<=` only grows a buffer that fitted exactly (mutation testing: equivalent).
    if (this.pos + bytes <= this.buf.length) return;
    // How much it grows beyond what is needed is speed only (mutation testing: equivalent).
    const grown = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + bytes));
    this.buf.copy(grown, 0, 0, this.pos);
    this.buf = grown;
  }
}

function writeString(b: Buffer, p: number, s: string | null): number {
  if (s === null) return b.writeUInt16LE(NULL_STRING, p);
  // Buffer.write's default encoding is utf8 too (mutation testing: equivalent).
  const len = b.write(s, p + 2, 'utf8');
  b.writeUInt16LE(len, p);
  return p + 2 + len;
}

/** Decodes a batch made by RecordEncoder.take(). Throws on a version or layout it does not know. */
export function decodeRecords(data: ArrayBuffer | Uint8Array): RequestRecord[] {
  const b = data instanceof Uint8Array ? Buffer.from(data.buffer, data.byteOffset, data.byteLength) : Buffer.from(data);
  const version = b.readUInt32LE(0);
  if (version !== CODEC_VERSION) throw new Error(`record batch version ${version} is not ${CODEC_VERSION}`);
  const n = b.readUInt32LE(4);
  // Pre-sized for speed; filled by index either way (mutation testing: equivalent).
  const out: RequestRecord[] = new Array(n);
  let p = HEADER;
  const str = (): string | null => {
    const len = b.readUInt16LE(p);
    p += 2;
    if (len === NULL_STRING) return null;
    const s = b.toString('utf8', p, p + len);
    p += len;
    return s;
  };
  for (let i = 0; i < n; i++) {
    const outcome = OUTCOMES[b[p]!];
    const tokenSource = TOKEN_SOURCES[b[p + 1]!];
    const failure = b[p + 2]!;
    const flags = b[p + 3]!;
    if (outcome === undefined || tokenSource === undefined || (failure !== NONE && METERING_FAILURES[failure] === undefined)) throw new Error(`record batch: bad record ${i}`);
    p += 4;
    const status = b.readUInt16LE(p);
    const ttft = b.readDoubleLE(p + 2);
    const ttfo = b.readDoubleLE(p + 10);
    const e2e = b.readDoubleLE(p + 18);
    const inputTokens = b.readUInt32LE(p + 26);
    const outputTokens = b.readUInt32LE(p + 30);
    const startedAt = b.readDoubleLE(p + 34);
    const inFlightAtStart = b.readUInt32LE(p + 42);
    const inFlightAtFirstToken = b.readInt32LE(p + 46);
    const cachedInputTokens = b.readInt32LE(p + 50);
    const reasoningTokens = b.readInt32LE(p + 54);
    const traceFlags = b[p + 58]!;
    const upstream = b[p + 59] === NONE ? -1 : b[p + 59]!;
    const silenceFirst = b.readFloatLE(p + 60);
    const silenceReasoning = b.readFloatLE(p + 64);
    const silenceTool = b.readFloatLE(p + 68);
    const silenceContent = b.readFloatLE(p + 72);
    const requestBytes = b.readUInt32LE(p + 76);
    const abortPropagation = b.readFloatLE(p + 80);
    p += 84;
    // The encoder never writes null for these three, so `?? ''` cannot be seen from a valid batch
    // (mutation testing: equivalent).
    const route = str() ?? '';
    const operation = str() ?? '';
    const model = str() ?? '';
    const errorType = str();
    const tenant = str();
    const traceId = str();
    const spanId = str();
    const parentSpanId = str();
    const responseModel = str();
    const finishReasons = str();
    let chunkGaps: Float32Array | null = null;
    if (flags & 2) {
      const count = b.readUInt32LE(p);
      p += 4;
      // A copy: the view must be 4-byte aligned, and the record outlives the batch buffer.
      chunkGaps = new Float32Array(count);
      new Uint8Array(chunkGaps.buffer).set(b.subarray(p, p + count * 4));
      p += count * 4;
    }
    out[i] = {
      route, upstream, operation, model, outcome, status, streamed: (flags & 1) !== 0, ttft, ttfo, e2e, inputTokens, outputTokens, tokenSource,
      chunkGaps, meteringFailure: failure === NONE ? null : METERING_FAILURES[failure]!, errorType,
      startedAt, inputTokensKnown: (flags & 4) !== 0, modelAdmitted: (flags & 8) !== 0, inFlightAtStart, inFlightAtFirstToken, cachedInputTokens, reasoningTokens,
      tenant, traceId, spanId, parentSpanId, traceFlags, responseModel, finishReasons,
      terminal: (flags & 16) !== 0, silenceFirst, silenceReasoning, silenceTool, silenceContent, requestBytes, abortPropagation,
    };
  }
  if (p !== b.length) throw new Error(`record batch: ${b.length - p} bytes left over`);
  return out;
}
