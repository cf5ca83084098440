/**
 * The strict JSON lexer under both event scanners (event-scan.ts for chat-shaped events,
 * event-scan-typed.ts for typed ones): where a scan is, and the pieces that read or skip one
 * JSON value from bytes, validating it exactly as JSON.parse would accept it. The scanners walk
 * the paths metering reads; everything else passes here.
 *
 * The position lives in the fields of a JsonLexer, which each scanner owns and reuses, so a
 * scan allocates nothing and no state is shared between files.
 */

export const QUOTE = 0x22;
export const BACKSLASH = 0x5c;
export const COMMA = 0x2c;
export const COLON = 0x3a;
export const LBRACE = 0x7b;
export const RBRACE = 0x7d;
export const LBRACKET = 0x5b;
export const RBRACKET = 0x5d;
/** Nesting deeper than this inside a skipped value is left to JSON.parse. */
export const MAX_DEPTH = 32;

export const enum V {
  /** Not a JSON value here: the scan gives up. */
  Bad = -1,
  Null,
  EmptyString,
  String,
  EmptyArray,
  Other,
}

/** What follows an object member or array item. */
export const MORE = 0;
export const CLOSED = 1;
export const BROKEN = 2;

const NULL = Buffer.from('null');
const TRUE = Buffer.from('true');
const FALSE = Buffer.from('false');
const NOTHING = Buffer.alloc(0);

/**
 * A scan over `b[p, e)`. Byte compares are written out in JS: a native Buffer.compare call
 * costs more than the few bytes of a key.
 */
export class JsonLexer {
  b: Buffer = NOTHING;
  p = 0;
  e = 0;
  /** The value read by the last plainInt(). */
  lastInt = -1;
  /** The body of the string read by the last plainString(): [strStart, strEnd). */
  strStart = -1;
  strEnd = -1;

  /** Starts a scan of `buf[start, end)`. */
  reset(buf: Buffer, start: number, end: number): void {
    this.b = buf;
    this.p = start;
    this.e = end;
  }

  ws(): void {
    const buf = this.b;
    const end = this.e;
    let q = this.p;
    while (q < end) {
      const c = buf[q]!;
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) q++;
      else break;
    }
    this.p = q;
  }

  /** After an object member or array item: a comma (another follows, `p` at it) or the closing bracket. */
  afterItem(close: number): typeof MORE | typeof CLOSED | typeof BROKEN {
    this.ws();
    if (this.p >= this.e) return BROKEN;
    const c = this.b[this.p];
    if (c === COMMA) {
      this.p++;
      this.ws();
      return MORE;
    }
    if (c === close) {
      this.p++;
      return CLOSED;
    }
    return BROKEN;
  }

  /** Whether the bytes [ks, ke) are `name`. */
  keyIs(ks: number, ke: number, name: Buffer): boolean {
    if (ke - ks !== name.length) return false;
    const buf = this.b;
    for (let i = 0; i < name.length; i++) if (buf[ks + i] !== name[i]) return false;
    return true;
  }

  /**
   * An object key at `p`, up to the value: returns the end of the key's body (it starts at the
   * old `p` + 1) and leaves `p` at the value, or -1. A key with an escape gives up: it could
   * spell a key metering reads.
   */
  key(): number {
    const buf = this.b;
    const end = this.e;
    if (this.p >= end || buf[this.p] !== QUOTE) return -1;
    let q = this.p + 1;
    for (; q < end; q++) {
      const c = buf[q]!;
      if (c === QUOTE) break;
      if (c === BACKSLASH || c < 0x20) return -1;
    }
    if (q >= end) return -1;
    this.p = q + 1;
    this.ws();
    if (this.p >= end || buf[this.p] !== COLON) return -1;
    this.p++;
    this.ws();
    return q;
  }

  /** A non-negative integer literal without fraction or exponent (the only kind usage holds), into lastInt. */
  plainInt(): boolean {
    const buf = this.b;
    const end = this.e;
    const s = this.p;
    let q = s;
    let n = 0;
    while (q < end && buf[q]! >= 0x30 && buf[q]! <= 0x39) {
      n = n * 10 + (buf[q]! - 0x30);
      q++;
    }
    this.p = q;
    const len = q - s;
    if (len === 0 || len > 15 || (len > 1 && buf[s] === 0x30)) return false;
    if (q < end && (buf[q] === 0x2e || buf[q] === 0x65 || buf[q] === 0x45)) return false;
    this.lastInt = n;
    return true;
  }

  /** A string without escapes at `p`: its body into strStart/strEnd. */
  plainString(): boolean {
    const buf = this.b;
    const end = this.e;
    if (this.p >= end || buf[this.p] !== QUOTE) return false;
    const s = this.p + 1;
    let q = s;
    for (; q < end; q++) {
      const c = buf[q]!;
      if (c === QUOTE) break;
      if (c === BACKSLASH || c < 0x20) return false;
    }
    if (q >= end) return false;
    this.strStart = s;
    this.strEnd = q;
    this.p = q + 1;
    return true;
  }

  /** Skips one JSON value at `p`, validating it strictly; says what kind it was. */
  value(depth: number): V {
    if (this.p >= this.e) return V.Bad;
    const c = this.b[this.p]!;
    if (c === QUOTE) return this.string();
    if (c === LBRACE) {
      if (depth >= MAX_DEPTH) return V.Bad;
      this.p++;
      this.ws();
      if (this.p < this.e && this.b[this.p] === RBRACE) {
        this.p++;
        return V.Other;
      }
      for (;;) {
        if (this.p >= this.e || this.b[this.p] !== QUOTE || this.string() === V.Bad) return V.Bad;
        this.ws();
        if (this.p >= this.e || this.b[this.p] !== COLON) return V.Bad;
        this.p++;
        this.ws();
        if (this.value(depth + 1) === V.Bad) return V.Bad;
        const next = this.afterItem(RBRACE);
        if (next === MORE) continue;
        return next === CLOSED ? V.Other : V.Bad;
      }
    }
    if (c === LBRACKET) {
      if (depth >= MAX_DEPTH) return V.Bad;
      this.p++;
      this.ws();
      if (this.p < this.e && this.b[this.p] === RBRACKET) {
        this.p++;
        return V.EmptyArray;
      }
      for (;;) {
        if (this.value(depth + 1) === V.Bad) return V.Bad;
        const next = this.afterItem(RBRACKET);
        if (next === MORE) continue;
        return next === CLOSED ? V.Other : V.Bad;
      }
    }
    if (c === 0x6e) return this.literal(NULL) ? V.Null : V.Bad;
    if (c === 0x74) return this.literal(TRUE) ? V.Other : V.Bad;
    if (c === 0x66) return this.literal(FALSE) ? V.Other : V.Bad;
    return this.number() ? V.Other : V.Bad;
  }

  literal(word: Buffer): boolean {
    if (this.e - this.p < word.length) return false;
    const buf = this.b;
    const at = this.p;
    for (let i = 0; i < word.length; i++) if (buf[at + i] !== word[i]) return false;
    this.p += word.length;
    return true;
  }

  /** A string at `p` (strict: valid escapes only, no raw control characters). */
  string(): V {
    const s = this.p + 1;
    const q = stringBodyEnd(this.b, s, this.e);
    if (q < 0) return V.Bad;
    this.p = q + 1;
    return q === s ? V.EmptyString : V.String;
  }

  /** -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
  number(): boolean {
    const buf = this.b;
    if (buf[this.p] === 0x2d) this.p++;
    if (this.p >= this.e) return false;
    if (buf[this.p] === 0x30) this.p++;
    else if (!this.digits()) return false;
    if (this.p < this.e && buf[this.p] === 0x2e) {
      this.p++;
      if (!this.digits()) return false;
    }
    if (this.p < this.e && (buf[this.p] === 0x65 || buf[this.p] === 0x45)) {
      this.p++;
      if (this.p < this.e && (buf[this.p] === 0x2b || buf[this.p] === 0x2d)) this.p++;
      if (!this.digits()) return false;
    }
    return true;
  }

  digits(): boolean {
    const buf = this.b;
    const end = this.e;
    const s = this.p;
    let q = s;
    while (q < end) {
      const c = buf[q]!;
      if (c < 0x30 || c > 0x39) break;
      q++;
    }
    this.p = q;
    return q > s;
  }
}

/**
 * Where the string body starting at `q` ends: the index of its closing quote before `end`,
 * or -1 for a raw control character, an invalid escape or no closing quote. Locals in the
 * byte loop: this is the scan's hottest loop.
 */
export function stringBodyEnd(buf: Buffer, q: number, end: number): number {
  for (;;) {
    if (q >= end) return -1;
    const c = buf[q]!;
    if (c === QUOTE) return q;
    if (c < 0x20) return -1;
    if (c !== BACKSLASH) {
      q++;
      continue;
    }
    if (q + 1 >= end) return -1;
    const n = buf[q + 1];
    if (n === 0x75) {
      if (q + 5 >= end) return -1;
      for (let i = 2; i < 6; i++) if (!isHex(buf[q + i])) return -1;
      q += 6;
      continue;
    }
    if (n !== QUOTE && n !== BACKSLASH && n !== 0x2f && n !== 0x62 && n !== 0x66 && n !== 0x6e && n !== 0x72 && n !== 0x74) return -1;
    q += 2;
  }
}

export function isHex(c: number | undefined): boolean {
  return c !== undefined && ((c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66));
}

/**
 * A stream's token events differ, as a rule, only in their token string: the same id,
 * created, model and finish_reason around it. A template is a token event a scan accepted
 * with one non-empty token string and nothing else that decides (its ScanResult has a token
 * span): an event that has the template's bytes before and after that string, and between
 * them a valid, non-empty JSON string body, is valid JSON of the same structure with a
 * non-empty string in the same place, so it says what the template said. Checking that costs
 * two compares and a walk over the token.
 */
export function matchTemplate(buf: Buffer, start: number, end: number, tpl: Buffer, valueStart: number, valueEnd: number): boolean {
  const suffix = tpl.length - valueEnd;
  const from = start + valueStart;
  const to = end - suffix;
  if (to <= from) return false;
  if (buf.compare(tpl, 0, valueStart, start, from) !== 0 || buf.compare(tpl, valueEnd, tpl.length, to, end) !== 0) return false;
  // The suffix starts with the token's closing quote: the body must end exactly there.
  return stringBodyEnd(buf, from, end) === to;
}
