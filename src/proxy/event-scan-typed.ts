/**
 * The byte-level fast path for typed-event streams (Anthropic Messages, OpenAI Responses):
 * says what `typedEventFacts(api, JSON.parse(event))` would say of one event, straight from
 * its bytes. A strict JSON walk that keeps only the root `type` and `delta` (a string, or an
 * object whose `type` and text fields it reads); everything else is validated and skipped.
 * Token deltas and the many structural events (content_block_start/stop, output_item.added,
 * ping, ...) are answered here; the few events that carry usage or an error, and anything the
 * walk cannot vouch for (an escaped key, an escaped type, a duplicate key it reads, nesting past
 * 32), answer UNKNOWN and take the full parse. test/unit/proxy-event-scan-typed.test.ts checks
 * that on every fixture and on random mutations of them.
 *
 * The Responses API puts `type` last (openai-python's alphabetical fields), so the decision is
 * made after the walk, from what it kept.
 */
import type { EventFacts } from '../lib/events.js';
import type { TypedApi } from '../lib/api-events.js';
import { KNOWN, UNKNOWN, lastScan } from './event-scan.js';
import { stringBodyEnd } from './json-lex.js';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const LBRACE = 0x7b;
const RBRACE = 0x7d;
const LBRACKET = 0x5b;
const RBRACKET = 0x5d;
const MAX_DEPTH = 32;

/** A typed API's names as bytes, built once per API (the scan compares bytes, never decodes). */
export interface TypedScanTable {
  api: TypedApi;
  /** Every event type the API's row names, with what it decides. */
  types: { name: Buffer; tokens: { field: Buffer; sub: Buffer | null; visible: boolean }[]; parse: boolean }[];
  /** Keys inside a delta object the specs read. */
  deltaFields: Buffer[];
}

export function typedScanTable(api: TypedApi): TypedScanTable {
  for (const specs of api.tokens.values()) {
    // The walk keeps only the root `delta`: a root token field of another name would need a wider walk.
    if (specs.some((s) => s.sub === null && s.field !== 'delta')) throw new Error(`${api.name}: a root token field must be \`delta\``);
  }
  const names = new Set([...api.tokens.keys(), ...api.usage.keys(), ...api.errors]);
  const types = [...names].map((n) => ({
    name: Buffer.from(n),
    tokens: (api.tokens.get(n) ?? []).map((s) => ({ field: Buffer.from(s.field), sub: s.sub === null ? null : Buffer.from(s.sub), visible: s.visible })),
    parse: api.usage.has(n) || api.errors.has(n),
  }));
  const deltaFields = [...new Set([...api.tokens.values()].flat().filter((s) => s.sub !== null).map((s) => s.field))].map((f) => Buffer.from(f));
  return { api, types, deltaFields };
}

const K_TYPE = Buffer.from('type');
const K_DELTA = Buffer.from('delta');

// Scanner state (module-level: a scan allocates nothing; the proxy loop is single-threaded).
let b: Buffer;
let p = 0;
let e = 0;
let typeStart = -1;
let typeEnd = -1;
/** Root delta: 0 absent/other, 1 string; its body's range. */
let deltaKind = 0;
let deltaStart = -1;
let deltaEnd = -1;
/** Delta object: its type's range, and each read field's body range (-1: absent or not a string). */
let subStart = -1;
let subEnd = -1;
const fieldStart: number[] = [];
const fieldEnd: number[] = [];
let table: TypedScanTable;

export function scanTypedEvent(tbl: TypedScanTable, buf: Buffer, start: number, end: number, fx: EventFacts): typeof KNOWN | typeof UNKNOWN {
  b = buf;
  p = start;
  e = end;
  table = tbl;
  typeStart = typeEnd = -1;
  deltaKind = 0;
  deltaSeen = false;
  subStart = subEnd = -1;
  for (let i = 0; i < tbl.deltaFields.length; i++) fieldStart[i] = fieldEnd[i] = -1;
  lastScan.template = false;
  ws();
  if (p >= e || b[p] !== LBRACE || !rootObject()) return UNKNOWN;
  ws();
  if (p !== e || typeStart < 0) return UNKNOWN;
  fx.token = false;
  fx.visible = false;
  fx.promptTokens = fx.completionTokens = fx.cachedTokens = fx.reasoningTokens = -1;
  fx.error = false;
  fx.usageOnly = false;
  const t = findType();
  if (t === null) return KNOWN; // a type the row does not name says nothing
  if (t.parse) return UNKNOWN;
  let decisive = 0;
  for (const s of t.tokens) {
    let from = -1;
    let to = -1;
    if (s.sub === null) {
      if (deltaKind === 1) {
        from = deltaStart;
        to = deltaEnd;
      }
    } else if (subStart >= 0 && bytesEqual(subStart, subEnd, s.sub)) {
      const i = fieldIndex(s.field);
      from = fieldStart[i]!;
      to = fieldEnd[i]!;
    }
    if (from >= 0 && to > from) {
      fx.token = true;
      if (s.visible) fx.visible = true;
      decisive++;
      lastScan.valueStart = from;
      lastScan.valueEnd = to;
    }
  }
  lastScan.template = decisive === 1;
  return KNOWN;
}

function fieldIndex(field: Buffer): number {
  const f = table.deltaFields;
  for (let i = 0; i < f.length; i++) if (f[i] === field || f[i]!.equals(field)) return i;
  return -1;
}

function findType(): TypedScanTable['types'][number] | null {
  const types = table.types;
  for (let i = 0; i < types.length; i++) if (bytesEqual(typeStart, typeEnd, types[i]!.name)) return types[i]!;
  return null;
}

function bytesEqual(s: number, t: number, name: Buffer): boolean {
  if (t - s !== name.length) return false;
  for (let i = 0; i < name.length; i++) if (b[s + i] !== name[i]) return false;
  return true;
}

function ws(): void {
  while (p < e) {
    const c = b[p]!;
    if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) p++;
    else break;
  }
}

/** A key at `p` (escape-free, or false); leaves `p` past the colon and whitespace. Returns the key's end. */
function key(): number {
  if (p >= e || b[p] !== QUOTE) return -1;
  const ks = p + 1;
  let q = ks;
  for (; q < e; q++) {
    const c = b[q]!;
    if (c === QUOTE) break;
    if (c === BACKSLASH || c < 0x20) return -1;
  }
  if (q >= e) return -1;
  p = q + 1;
  ws();
  if (p >= e || b[p] !== COLON) return -1;
  p++;
  ws();
  return q;
}

/** After a member: MORE (0), CLOSED (1) or BROKEN (2). */
function after(close: number): number {
  ws();
  if (p >= e) return 2;
  if (b[p] === COMMA) {
    p++;
    ws();
    return 0;
  }
  if (b[p] === close) {
    p++;
    return 1;
  }
  return 2;
}

function rootObject(): boolean {
  p++;
  ws();
  if (p < e && b[p] === RBRACE) {
    p++;
    return true;
  }
  for (;;) {
    const ks = p + 1;
    const ke = key();
    if (ke < 0) return false;
    if (bytesEqual(ks, ke, K_TYPE)) {
      if (typeStart >= 0 || !plainString()) return false;
      typeStart = strStart;
      typeEnd = strEnd;
    } else if (bytesEqual(ks, ke, K_DELTA)) {
      if (deltaSeen) return false;
      deltaSeen = true;
      if (!delta()) return false;
    } else if (!skip(0)) return false;
    const n = after(RBRACE);
    if (n === 1) break;
    if (n === 2) return false;
  }
  return true;
}
/** A duplicate `delta` gives up: JSON.parse keeps the last one. */
let deltaSeen = false;

let strStart = -1;
let strEnd = -1;
/** A string without escapes at `p`: its body range in strStart/strEnd. */
function plainString(): boolean {
  if (p >= e || b[p] !== QUOTE) return false;
  const s = p + 1;
  let q = s;
  for (; q < e; q++) {
    const c = b[q]!;
    if (c === QUOTE) break;
    if (c === BACKSLASH || c < 0x20) return false;
  }
  if (q >= e) return false;
  strStart = s;
  strEnd = q;
  p = q + 1;
  return true;
}

function delta(): boolean {
  const c = b[p];
  if (c === QUOTE) {
    const s = p + 1;
    const q = stringBodyEnd(b, s, e);
    if (q < 0) return false;
    deltaKind = 1;
    deltaStart = s;
    deltaEnd = q;
    p = q + 1;
    return true;
  }
  if (c !== LBRACE) return skip(0);
  p++;
  ws();
  if (p < e && b[p] === RBRACE) {
    p++;
    return true;
  }
  const fields = table.deltaFields;
  let seen = 0;
  for (;;) {
    const ks = p + 1;
    const ke = key();
    if (ke < 0) return false;
    let handled = false;
    if (bytesEqual(ks, ke, K_TYPE)) {
      if (seen & 1) return false;
      seen |= 1;
      if (b[p] === QUOTE) {
        if (!plainString()) return false;
        subStart = strStart;
        subEnd = strEnd;
      } else if (!skip(0)) return false;
      handled = true;
    } else {
      for (let i = 0; i < fields.length; i++) {
        if (!bytesEqual(ks, ke, fields[i]!)) continue;
        const bit = 2 << i;
        if (seen & bit) return false;
        seen |= bit;
        if (b[p] === QUOTE) {
          const s = p + 1;
          const q = stringBodyEnd(b, s, e);
          if (q < 0) return false;
          fieldStart[i] = s;
          fieldEnd[i] = q;
          p = q + 1;
        } else if (!skip(0)) return false;
        handled = true;
        break;
      }
    }
    if (!handled && !skip(0)) return false;
    const n = after(RBRACE);
    if (n === 1) return true;
    if (n === 2) return false;
  }
}

/** Skips one JSON value at `p`, validating it strictly. */
function skip(depth: number): boolean {
  if (p >= e) return false;
  const c = b[p]!;
  if (c === QUOTE) {
    const q = stringBodyEnd(b, p + 1, e);
    if (q < 0) return false;
    p = q + 1;
    return true;
  }
  if (c === LBRACE || c === LBRACKET) {
    if (depth >= MAX_DEPTH) return false;
    const close = c === LBRACE ? RBRACE : RBRACKET;
    p++;
    ws();
    if (p < e && b[p] === close) {
      p++;
      return true;
    }
    for (;;) {
      if (close === RBRACE) {
        if (p >= e || b[p] !== QUOTE) return false;
        const q = stringBodyEnd(b, p + 1, e);
        if (q < 0) return false;
        p = q + 1;
        ws();
        if (p >= e || b[p] !== COLON) return false;
        p++;
        ws();
      }
      if (!skip(depth + 1)) return false;
      const n = after(close);
      if (n === 1) return true;
      if (n === 2) return false;
    }
  }
  if (c === 0x6e) return word(NULL);
  if (c === 0x74) return word(TRUE);
  if (c === 0x66) return word(FALSE);
  return number();
}

const NULL = Buffer.from('null');
const TRUE = Buffer.from('true');
const FALSE = Buffer.from('false');

function word(w: Buffer): boolean {
  if (e - p < w.length) return false;
  for (let i = 0; i < w.length; i++) if (b[p + i] !== w[i]) return false;
  p += w.length;
  return true;
}

/** -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
function number(): boolean {
  if (b[p] === 0x2d) p++;
  if (p >= e) return false;
  if (b[p] === 0x30) p++;
  else if (!digits()) return false;
  if (p < e && b[p] === 0x2e) {
    p++;
    if (!digits()) return false;
  }
  if (p < e && (b[p] === 0x65 || b[p] === 0x45)) {
    p++;
    if (p < e && (b[p] === 0x2b || b[p] === 0x2d)) p++;
    if (!digits()) return false;
  }
  return true;
}

function digits(): boolean {
  const s = p;
  while (p < e) {
    const c = b[p]!;
    if (c < 0x30 || c > 0x39) break;
    p++;
  }
  return p > s;
}
