/**
 * The byte-level fast path for typed-event streams (Anthropic Messages, OpenAI Responses):
 * says what `typedEventFacts(api, JSON.parse(event))` would say of one event, straight from
 * its bytes. A strict JSON walk, over the lexer of json-lex.ts, that keeps only the root `type`
 * and `delta` (a string, or an object whose `type` and text fields it reads); everything else is
 * validated and skipped. Token deltas and the many structural events (content_block_start/stop,
 * output_item.added, ping, ...) are answered here; the few events that carry usage or an error,
 * and anything the walk cannot vouch for (an escaped key, an escaped type, a duplicate key it
 * reads, nesting past 32), answer null and take the full parse.
 * test/unit/proxy/event-scan-typed.test.ts checks that on every fixture and on random mutations
 * of them.
 *
 * The Responses API puts `type` last (openai-python's alphabetical fields), so the decision is
 * made after the walk, from what it kept.
 */
import type { TypedApi } from '../lib/api-events.js';
import { resetFacts } from '../lib/events.js';
import { scanResult, type EventScanner, type ScanResult } from './event-scan.js';
import { JsonLexer, stringBodyEnd, V, QUOTE, LBRACE, RBRACE, MORE, CLOSED } from './json-lex.js';

/** One place a token may lie in an event type: the root `delta` string, or `delta.<field>` of a delta object of type `sub`. */
interface TokenAt {
  sub: Buffer | null;
  /** Index of the field in TypedScanTable.deltaFields (-1 for the root `delta`). */
  field: number;
  visible: boolean;
  tool: boolean;
}

/** A typed API's names as bytes, built once per API (the scan compares bytes, never decodes). */
export interface TypedScanTable {
  api: TypedApi;
  /** Every event type the API's row names, with what it decides. */
  types: { name: Buffer; tokens: TokenAt[]; parse: boolean; terminal: boolean }[];
  /** Keys inside a delta object the specs read. */
  deltaFields: Buffer[];
}

export function typedScanTable(api: TypedApi): TypedScanTable {
  for (const specs of api.tokens.values()) {
    // The walk keeps only the root `delta`: a root token field of another name would need a wider walk.
    if (specs.some((s) => s.sub === null && s.field !== 'delta')) throw new Error(`${api.name}: a root token field must be \`delta\``);
  }
  const fields = [...new Set([...api.tokens.values()].flat().filter((s) => s.sub !== null).map((s) => s.field))];
  const names = new Set([...api.tokens.keys(), ...api.usage.keys(), ...api.errors, ...api.terminal]);
  const types = [...names].map((n) => ({
    name: Buffer.from(n),
    tokens: (api.tokens.get(n) ?? []).map((s) => ({ sub: s.sub === null ? null : Buffer.from(s.sub), field: s.sub === null ? -1 : fields.indexOf(s.field), visible: s.visible, tool: s.tool === true })),
    parse: api.usage.has(n) || api.errors.has(n),
    terminal: api.terminal.has(n),
  }));
  return { api, types, deltaFields: fields.map((f) => Buffer.from(f)) };
}

const K_TYPE = Buffer.from('type');
const K_DELTA = Buffer.from('delta');

/**
 * One API's scanner. The walk's state lives in fields: a scan allocates nothing, and one
 * scanner serves every stream of its API on a loop, one event at a time.
 */
export class TypedEventScanner implements EventScanner {
  private readonly lx = new JsonLexer();
  private readonly result = scanResult();
  private typeStart = -1;
  private typeEnd = -1;
  /** A duplicate `delta` gives up: JSON.parse keeps the last one. */
  private deltaSeen = false;
  /** Root delta: 0 absent/other, 1 string; its body's range. */
  private deltaKind = 0;
  private deltaStart = -1;
  private deltaEnd = -1;
  /** Delta object: its type's range, and each read field's body range (-1: absent or not a string). */
  private subStart = -1;
  private subEnd = -1;
  private readonly fieldStart: Int32Array;
  private readonly fieldEnd: Int32Array;

  constructor(readonly table: TypedScanTable) {
    this.fieldStart = new Int32Array(table.deltaFields.length);
    this.fieldEnd = new Int32Array(table.deltaFields.length);
  }

  scan(buf: Buffer, start: number, end: number): ScanResult | null {
    const lx = this.lx;
    lx.reset(buf, start, end);
    this.typeStart = this.typeEnd = -1;
    this.deltaKind = 0;
    this.deltaSeen = false;
    this.subStart = this.subEnd = -1;
    const fs = this.fieldStart;
    const fe = this.fieldEnd;
    for (let i = 0; i < fs.length; i++) fs[i] = fe[i] = -1;
    lx.ws();
    if (lx.p >= lx.e || lx.b[lx.p] !== LBRACE || !this.rootObject()) return null;
    lx.ws();
    if (lx.p !== lx.e || this.typeStart < 0) return null;
    const r = this.result;
    const fx = r.facts;
    resetFacts(fx);
    r.tokenStart = r.tokenEnd = -1;
    const t = this.findType();
    if (t === null) return r; // a type the row does not name says nothing
    if (t.parse) return null;
    if (t.terminal) fx.terminal = true;
    let decisive = 0;
    let from = -1;
    let to = -1;
    for (const s of t.tokens) {
      let a = -1;
      let z = -1;
      if (s.sub === null) {
        if (this.deltaKind === 1) {
          a = this.deltaStart;
          z = this.deltaEnd;
        }
      } else if (this.subStart >= 0 && lx.keyIs(this.subStart, this.subEnd, s.sub)) {
        a = this.fieldStart[s.field]!;
        z = this.fieldEnd[s.field]!;
      }
      if (a >= 0 && z > a) {
        fx.token = true;
        if (s.visible) fx.visible = true;
        if (s.tool) fx.tool = true;
        decisive++;
        from = a;
        to = z;
      }
    }
    if (decisive === 1) {
      r.tokenStart = from;
      r.tokenEnd = to;
    }
    return r;
  }

  private findType(): TypedScanTable['types'][number] | null {
    const types = this.table.types;
    for (let i = 0; i < types.length; i++) if (this.lx.keyIs(this.typeStart, this.typeEnd, types[i]!.name)) return types[i]!;
    return null;
  }

  private rootObject(): boolean {
    const lx = this.lx;
    lx.p++;
    lx.ws();
    if (lx.p < lx.e && lx.b[lx.p] === RBRACE) {
      lx.p++;
      return true;
    }
    for (;;) {
      const ks = lx.p + 1;
      const ke = lx.key();
      if (ke < 0) return false;
      if (lx.keyIs(ks, ke, K_TYPE)) {
        if (this.typeStart >= 0 || !lx.plainString()) return false;
        this.typeStart = lx.strStart;
        this.typeEnd = lx.strEnd;
      } else if (lx.keyIs(ks, ke, K_DELTA)) {
        if (this.deltaSeen) return false;
        this.deltaSeen = true;
        if (!this.delta()) return false;
      } else if (lx.value(0) === V.Bad) return false;
      const n = lx.afterItem(RBRACE);
      if (n === CLOSED) return true;
      if (n !== MORE) return false;
    }
  }

  private delta(): boolean {
    const lx = this.lx;
    const c = lx.b[lx.p];
    if (c === QUOTE) {
      const s = lx.p + 1;
      const q = stringBodyEnd(lx.b, s, lx.e);
      if (q < 0) return false;
      this.deltaKind = 1;
      this.deltaStart = s;
      this.deltaEnd = q;
      lx.p = q + 1;
      return true;
    }
    if (c !== LBRACE) return lx.value(0) !== V.Bad;
    lx.p++;
    lx.ws();
    if (lx.p < lx.e && lx.b[lx.p] === RBRACE) {
      lx.p++;
      return true;
    }
    const fields = this.table.deltaFields;
    let seen = 0;
    for (;;) {
      const ks = lx.p + 1;
      const ke = lx.key();
      if (ke < 0) return false;
      let handled = false;
      if (lx.keyIs(ks, ke, K_TYPE)) {
        if (seen & 1) return false;
        seen |= 1;
        if (lx.b[lx.p] === QUOTE) {
          if (!lx.plainString()) return false;
          this.subStart = lx.strStart;
          this.subEnd = lx.strEnd;
        } else if (lx.value(0) === V.Bad) return false;
        handled = true;
      } else {
        for (let i = 0; i < fields.length; i++) {
          if (!lx.keyIs(ks, ke, fields[i]!)) continue;
          const bit = 2 << i;
          if (seen & bit) return false;
          seen |= bit;
          if (lx.b[lx.p] === QUOTE) {
            const s = lx.p + 1;
            const q = stringBodyEnd(lx.b, s, lx.e);
            if (q < 0) return false;
            this.fieldStart[i] = s;
            this.fieldEnd[i] = q;
            lx.p = q + 1;
          } else if (lx.value(0) === V.Bad) return false;
          handled = true;
          break;
        }
      }
      if (!handled && lx.value(0) === V.Bad) return false;
      const n = lx.afterItem(RBRACE);
      if (n === CLOSED) return true;
      if (n !== MORE) return false;
    }
  }
}
