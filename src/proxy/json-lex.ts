/**
 * The strict JSON tokenizer under the event scanner (event-scan.ts): where a scan is (S), and
 * the pieces that skip or read one JSON value from bytes, validating it exactly as JSON.parse
 * would accept it. The scanner walks the paths metering reads; everything else passes here.
 * State lives in one object shared by both files, so a scan allocates nothing.
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

/** Where a scan is: the buffer, the position, the end, and the value of the last plainInt(). */
export const S: { b: Buffer; p: number; e: number; lastInt: number } = { b: Buffer.alloc(0), p: 0, e: 0, lastInt: -1 };

export function ws(): void {
  const buf = S.b;
  const end = S.e;
  let q = S.p;
  while (q < end) {
    const c = buf[q]!;
    if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) q++;
    else break;
  }
  S.p = q;
}

/** Byte compare in JS: a native Buffer.compare call costs more than these few bytes. */
export const MORE = 0;
export const CLOSED = 1;
export const BROKEN = 2;

/** After an object member or array item: a comma (another follows, `p` at it) or the closing bracket. */
export function afterItem(close: number): typeof MORE | typeof CLOSED | typeof BROKEN {
  ws();
  if (S.p >= S.e) return BROKEN;
  if (S.b[S.p] === COMMA) {
    S.p++;
    ws();
    return MORE;
  }
  if (S.b[S.p] === close) {
    S.p++;
    return CLOSED;
  }
  return BROKEN;
}

export function keyIs(ks: number, ke: number, name: Buffer): boolean {
  if (ke - ks !== name.length) return false;
  for (let i = 0; i < name.length; i++) if (S.b[ks + i] !== name[i]) return false;
  return true;
}

/** A non-negative integer literal without fraction or exponent (the only kind usage holds). */
export function plainInt(): boolean {
  const s = S.p;
  let n = 0;
  while (S.p < S.e && S.b[S.p]! >= 0x30 && S.b[S.p]! <= 0x39) {
    n = n * 10 + (S.b[S.p]! - 0x30);
    S.p++;
  }
  const len = S.p - s;
  if (len === 0 || len > 15 || (len > 1 && S.b[s] === 0x30)) return false;
  if (S.p < S.e && (S.b[S.p] === 0x2e || S.b[S.p] === 0x65 || S.b[S.p] === 0x45)) return false;
  S.lastInt = n;
  return true;
}

/** Skips one JSON value at `p`, validating it strictly; says what kind it was. */
export function value(depth: number): V {
  if (S.p >= S.e) return V.Bad;
  const c = S.b[S.p]!;
  if (c === QUOTE) return string();
  if (c === LBRACE) {
    if (depth >= MAX_DEPTH) return V.Bad;
    S.p++;
    ws();
    if (S.p < S.e && S.b[S.p] === RBRACE) {
      S.p++;
      return V.Other;
    }
    for (;;) {
      if (S.p >= S.e || S.b[S.p] !== QUOTE || string() === V.Bad) return V.Bad;
      ws();
      if (S.p >= S.e || S.b[S.p] !== COLON) return V.Bad;
      S.p++;
      ws();
      if (value(depth + 1) === V.Bad) return V.Bad;
      const next = afterItem(RBRACE);
      if (next === MORE) continue;
      return next === CLOSED ? V.Other : V.Bad;
    }
  }
  if (c === LBRACKET) {
    if (depth >= MAX_DEPTH) return V.Bad;
    S.p++;
    ws();
    if (S.p < S.e && S.b[S.p] === RBRACKET) {
      S.p++;
      return V.EmptyArray;
    }
    for (;;) {
      if (value(depth + 1) === V.Bad) return V.Bad;
      const next = afterItem(RBRACKET);
      if (next === MORE) continue;
      return next === CLOSED ? V.Other : V.Bad;
    }
  }
  if (c === 0x6e) return literal(NULL) ? V.Null : V.Bad;
  if (c === 0x74) return literal(TRUE) ? V.Other : V.Bad;
  if (c === 0x66) return literal(FALSE) ? V.Other : V.Bad;
  return number() ? V.Other : V.Bad;
}

const NULL = Buffer.from('null');
const TRUE = Buffer.from('true');
const FALSE = Buffer.from('false');

export function literal(word: Buffer): boolean {
  if (S.e - S.p < word.length) return false;
  for (let i = 0; i < word.length; i++) if (S.b[S.p + i] !== word[i]) return false;
  S.p += word.length;
  return true;
}

/** A string at `p` (strict: valid escapes only, no raw control characters). */
export function string(): V {
  const s = S.p + 1;
  const q = stringBodyEnd(S.b, s, S.e);
  if (q < 0) return V.Bad;
  S.p = q + 1;
  return q === s ? V.EmptyString : V.String;
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

/** -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
export function number(): boolean {
  if (S.b[S.p] === 0x2d) S.p++;
  if (S.p >= S.e) return false;
  if (S.b[S.p] === 0x30) S.p++;
  else if (!digits()) return false;
  if (S.p < S.e && S.b[S.p] === 0x2e) {
    S.p++;
    if (!digits()) return false;
  }
  if (S.p < S.e && (S.b[S.p] === 0x65 || S.b[S.p] === 0x45)) {
    S.p++;
    if (S.p < S.e && (S.b[S.p] === 0x2b || S.b[S.p] === 0x2d)) S.p++;
    if (!digits()) return false;
  }
  return true;
}

export function digits(): boolean {
  const buf = S.b;
  const end = S.e;
  const s = S.p;
  let q = s;
  while (q < end) {
    const c = buf[q]!;
    if (c < 0x30 || c > 0x39) break;
    q++;
  }
  S.p = q;
  return q > s;
}

/**
 * A stream's token events differ, as a rule, only in their token string: the same id,
 * created, model and finish_reason around it. A template is a token event the scan accepted
 * (one choice, one non-empty token string, no usage): an event that has the template's bytes
 * before and after that string, and between them a valid, non-empty JSON string body, is
 * valid JSON of the same structure with a non-empty string in the same place, so it says
 * what the template said. Checking that costs two compares and a walk over the token.
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

