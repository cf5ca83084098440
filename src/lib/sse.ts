/**
 * Incremental SSE line framing over raw upstream chunks. Works on bytes (never decodes
 * what it does not need), across arbitrary read boundaries, with `\n` or `\r\n` line ends.
 * Each `data:` line is handed over as one payload: OpenAI-compatible servers never split a
 * JSON event over several data lines, and some (see fixtures) separate events with a single
 * newline, which strict SSE would merge into one event.
 *
 * In strip mode, the framer can drop whole events (a `data:` line and the blank line that
 * ends it) from what is forwarded; otherwise what is forwarded is the input, untouched.
 */

const NL = 10;
const CR = 13;
const DATA = Buffer.from('data:');
const USAGE = Buffer.from('"usage"');
/** An event line longer than this stops metering for the request (the bytes still flow). */
export const MAX_LINE_BYTES = 4 * 1024 * 1024;

export const KEEP = 0;
export const DROP = 1;
export const GIVE_UP = 2;
export type LineVerdict = typeof KEEP | typeof DROP | typeof GIVE_UP;

/** Called per complete `data:` line with the payload's byte range; returns whether to drop it. */
export type DataHandler = (buf: Buffer, start: number, end: number) => LineVerdict;

export class SseFramer {
  private carry: Buffer | null = null;
  private dropNextBlank = false;
  private active = true;

  /**
   * Whether a read must be framed before it is forwarded: in strip mode, when it could hold
   * (part of) an event to drop, which only a usage event is: the read mentions "usage", ends
   * inside a line, continues a line held from the previous read, or starts where a dropped
   * event's closing blank line is still due. Every other read (a token chunk, nearly always)
   * can be forwarded first and given to `observe()` after.
   */
  mustFrameFirst(chunk: Buffer): boolean {
    return this.strip && this.active && (this.carry !== null || this.dropNextBlank || chunk[chunk.length - 1] !== NL || mentionsUsage(chunk));
  }

  constructor(
    private readonly strip: boolean,
    private readonly onData: DataHandler,
    private readonly onOversized: () => void,
  ) {}

  /**
   * Feeds one upstream chunk. In pass-through mode returns nothing (the caller forwards the
   * chunk as-is); in strip mode returns the bytes to forward now (possibly empty), holding
   * back only an incomplete trailing line.
   */
  feed(chunk: Buffer): Buffer | null {
    return this.frame(chunk, this.strip);
  }

  /**
   * Frames a read the caller has already forwarded unchanged, so nothing in it can be
   * dropped. In strip mode only for a read `mustFrameFirst` let through: held bytes have
   * not been forwarded yet.
   */
  observe(chunk: Buffer): void {
    this.frame(chunk, false);
  }

  private frame(chunk: Buffer, strip: boolean): Buffer | null {
    if (!this.active) return strip ? chunk : null;
    const buf = this.carry ? Buffer.concat([this.carry, chunk]) : chunk;
    this.carry = null;
    let pos = 0;
    let emitFrom = 0;
    let out: Buffer[] | null = null;
    let nl: number;
    while ((nl = buf.indexOf(NL, pos)) !== -1) {
      const end = nl > pos && buf[nl - 1] === CR ? nl - 1 : nl;
      let verdict: LineVerdict = KEEP;
      if (end === pos) {
        if (this.dropNextBlank) verdict = DROP;
        this.dropNextBlank = false;
      } else {
        this.dropNextBlank = false;
        if (isData(buf, pos, end)) {
          let s = pos + DATA.length;
          if (buf[s] === 32) s++;
          verdict = this.onData(buf, s, end);
          if (verdict === GIVE_UP) return this.giveUp(buf, emitFrom, out, strip);
          if (verdict === DROP && strip) this.dropNextBlank = true;
        }
      }
      if (verdict === DROP && strip) {
        out ??= [];
        if (pos > emitFrom) out.push(buf.subarray(emitFrom, pos));
        emitFrom = nl + 1;
      }
      pos = nl + 1;
    }
    if (pos < buf.length) {
      if (buf.length - pos > MAX_LINE_BYTES) {
        this.onOversized();
        return this.giveUp(buf, emitFrom, out, strip);
      }
      this.carry = Buffer.from(buf.subarray(pos));
    }
    if (!strip) return null;
    if (!out) return emitFrom === 0 && pos === buf.length ? buf : buf.subarray(emitFrom, pos);
    if (pos > emitFrom) out.push(buf.subarray(emitFrom, pos));
    return out.length === 1 ? out[0]! : Buffer.concat(out);
  }

  /** End of the upstream body: a final line without a newline is still a line. */
  end(): Buffer | null {
    const rest = this.carry;
    this.carry = null;
    if (!rest || !this.active) return this.strip ? rest : null;
    const out = this.feed(Buffer.concat([rest, Buffer.from('\n')]));
    if (!this.strip) return null;
    // Forward the tail exactly as received: without the newline we appended.
    if (!out || out.length === 0) return out;
    return out[out.length - 1] === NL ? out.subarray(0, out.length - 1) : out;
  }

  /** Stops framing: from here on everything (including what was held) passes through. */
  private giveUp(buf: Buffer, emitFrom: number, out: Buffer[] | null, strip: boolean): Buffer | null {
    this.active = false;
    this.carry = null;
    if (!strip) return null;
    const rest = buf.subarray(emitFrom);
    if (!out) return rest;
    out.push(rest);
    return Buffer.concat(out);
  }
}

/**
 * Whether the read holds `"usage"`: a hop from one `u` to the next (memchr) beats
 * Buffer.includes with a multi-byte needle, which costs ~200 ns per read here.
 */
function mentionsUsage(chunk: Buffer): boolean {
  for (let i = chunk.indexOf(0x75, 1); i !== -1; i = chunk.indexOf(0x75, i + 1)) {
    if (chunk[i - 1] !== 0x22 || i + USAGE.length - 1 > chunk.length) continue;
    let k = 2;
    while (k < USAGE.length && chunk[i - 1 + k] === USAGE[k]) k++;
    if (k === USAGE.length) return true;
  }
  return false;
}

function isData(buf: Buffer, start: number, end: number): boolean {
  if (end - start < DATA.length) return false;
  for (let i = 0; i < DATA.length; i++) if (buf[start + i] !== DATA[i]) return false;
  return true;
}
