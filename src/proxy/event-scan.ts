/**
 * The byte-level fast path of metering for chat-shaped events (chat completions, completions):
 * reads what `eventFacts(JSON.parse(event))` would say of one streaming event straight from its
 * bytes, without decoding a string or building an object. Nearly every event of a stream is a
 * token delta, a role chunk or a finish chunk; those are answered here. Anything the scanner
 * cannot vouch for exactly — an escaped key, a non-null error, tool calls, a non-string
 * content, a duplicate key it cares about, anything that is not strictly valid JSON — answers
 * null, and the caller takes the full parse. So the fast path never decides differently from
 * the full one (test/unit/proxy/event-scan.test.ts checks that on every fixture and on random
 * events).
 *
 * The scanner walks, over the strict JSON lexer of json-lex.ts, only the paths metering reads:
 * `choices[].delta|message.{content,reasoning,reasoning_content,tool_calls,function_call}`,
 * `choices[].text`, `usage.{prompt_tokens,completion_tokens}`,
 * `usage.prompt_tokens_details.cached_tokens`, `usage.completion_tokens_details.reasoning_tokens`
 * and `error`. The two detail paths matter for speed: vLLM's `continuous_usage_stats` puts usage
 * (with `prompt_tokens_details` under `--enable-prompt-tokens-details`) in every chunk, so a
 * usage shape the scan did not know would send every event of such a stream to JSON.parse.
 */
import { emptyFacts, resetFacts, type EventFacts } from '../lib/events.js';
import { JsonLexer, V, LBRACE, RBRACE, LBRACKET, RBRACKET, MORE, CLOSED } from './json-lex.js';

/** What a scan found. One per scanner, reused: the caller reads it before the next scan. */
export interface ScanResult {
  /** Exactly what the full parse would say of the event. */
  readonly facts: EventFacts;
  /**
   * Where the event's one token string lies in the buffer, [tokenStart, tokenEnd), when the
   * event can serve as a template (json-lex.ts matchTemplate); -1 when it cannot.
   */
  tokenStart: number;
  tokenEnd: number;
}

export function scanResult(): ScanResult {
  return { facts: emptyFacts(), tokenStart: -1, tokenEnd: -1 };
}

/** A byte-level scanner of one API's events: what the event says, or null when it cannot vouch for it (the caller parses it). */
export interface EventScanner {
  scan(buf: Buffer, start: number, end: number): ScanResult | null;
}

const DONE = Buffer.from('[DONE]');

const ROOT = 0;
const USAGE = 1;
const CHOICE = 2;
const PART = 3;
const PROMPT_DETAILS = 4;
const COMPLETION_DETAILS = 5;
type Ctx = typeof ROOT | typeof USAGE | typeof CHOICE | typeof PART | typeof PROMPT_DETAILS | typeof COMPLETION_DETAILS;

const K_CHOICES = Buffer.from('choices');
const K_USAGE = Buffer.from('usage');
const K_ERROR = Buffer.from('error');
const K_DELTA = Buffer.from('delta');
const K_MESSAGE = Buffer.from('message');
const K_TEXT = Buffer.from('text');
const K_CONTENT = Buffer.from('content');
const K_REASONING = Buffer.from('reasoning');
const K_REASONING_CONTENT = Buffer.from('reasoning_content');
const K_TOOL_CALLS = Buffer.from('tool_calls');
const K_FUNCTION_CALL = Buffer.from('function_call');
const K_PROMPT_TOKENS = Buffer.from('prompt_tokens');
const K_COMPLETION_TOKENS = Buffer.from('completion_tokens');
const K_PROMPT_DETAILS = Buffer.from('prompt_tokens_details');
const K_COMPLETION_DETAILS = Buffer.from('completion_tokens_details');
const K_CACHED_TOKENS = Buffer.from('cached_tokens');
const K_REASONING_TOKENS = Buffer.from('reasoning_tokens');

/**
 * The scan's path state lives in fields: a scan allocates nothing, and one scanner serves
 * every stream of a loop, one event at a time.
 */
export class ChatEventScanner implements EventScanner {
  private readonly lx = new JsonLexer();
  private readonly result = scanResult();
  private readonly fx = this.result.facts;
  /** Non-empty token strings seen (content, reasoning, reasoning_content, text), and where the last one's bytes are. */
  private decisive = 0;
  private decisiveStart = -1;
  private decisiveEnd = -1;
  // Per-object "seen" bits, so a duplicate key metering reads gives up (JSON.parse keeps the last).
  private rootSeen = 0;
  private choicesLength = -1;
  private usageObject = false;
  private usageSeen = 0;
  private detailSeen = 0;
  // One choice's state.
  private choiceSeen = 0;
  private textVisible = false;
  /** 0 absent, 1 null, 2 object. */
  private deltaState = 0;
  private messageState = 0;
  // What the delta (or message) said: whichever eventFacts would read.
  private dVisible = false;
  private dReasoning = false;
  private mVisible = false;
  private mReasoning = false;
  private partSeen = 0;
  private partVisible = false;
  private partReasoning = false;

  /** The event in `buf[start, end)`: its facts (and token span), or null for the full parse. */
  scan(buf: Buffer, start: number, end: number): ScanResult | null {
    const r = this.result;
    resetFacts(r.facts);
    r.tokenStart = r.tokenEnd = -1;
    // The stream's end: its terminal event, nothing else.
    if (end - start === DONE.length && buf.compare(DONE, 0, DONE.length, start, end) === 0) {
      r.facts.terminal = true;
      return r;
    }
    const lx = this.lx;
    lx.reset(buf, start, end);
    this.decisive = 0;
    lx.ws();
    if (lx.p >= lx.e || lx.b[lx.p] !== LBRACE) return null;
    if (!this.root()) return null;
    lx.ws();
    if (lx.p !== lx.e) return null;
    if (r.facts.token && this.decisive === 1 && this.choicesLength === 1 && !this.usageObject) {
      r.tokenStart = this.decisiveStart;
      r.tokenEnd = this.decisiveEnd;
    }
    return r;
  }

  /** One member's value, by the object it is in (a switch keeps every call site monomorphic). */
  private member(ctx: Ctx, ks: number, ke: number): boolean {
    switch (ctx) {
      case ROOT:
        return this.rootMember(ks, ke);
      case USAGE:
        return this.usageMember(ks, ke);
      case CHOICE:
        return this.choiceMember(ks, ke);
      case PROMPT_DETAILS:
        return this.detailMember(ks, ke, K_CACHED_TOKENS, 0);
      case COMPLETION_DETAILS:
        return this.detailMember(ks, ke, K_REASONING_TOKENS, 1);
      default:
        return this.partMember(ks, ke);
    }
  }

  /** Walks an object's members, calling member() at each value (with `p` at the value). False on anything unexpected. */
  private members(ctx: Ctx): boolean {
    const lx = this.lx;
    lx.p++; // {
    lx.ws();
    if (lx.p < lx.e && lx.b[lx.p] === RBRACE) {
      lx.p++;
      return true;
    }
    for (;;) {
      const ks = lx.p + 1;
      const ke = lx.key();
      if (ke < 0) return false;
      if (!this.member(ctx, ks, ke)) return false;
      const next = lx.afterItem(RBRACE);
      if (next === MORE) continue;
      return next === CLOSED;
    }
  }

  private root(): boolean {
    this.rootSeen = 0;
    this.usageSeen = 0;
    this.choicesLength = -1;
    this.usageObject = false;
    if (!this.members(ROOT)) return false;
    this.fx.usageOnly = this.usageObject && this.choicesLength === 0;
    return true;
  }

  private once(bit: number): boolean {
    if (this.rootSeen & bit) return false;
    this.rootSeen |= bit;
    return true;
  }

  private rootMember(ks: number, ke: number): boolean {
    const lx = this.lx;
    if (lx.keyIs(ks, ke, K_CHOICES)) return this.once(1) && this.choices();
    if (lx.keyIs(ks, ke, K_USAGE)) {
      if (!this.once(2)) return false;
      if (lx.b[lx.p] === LBRACE) {
        this.usageObject = true;
        return this.members(USAGE);
      }
      return lx.value(0) === V.Null;
    }
    // A non-null error decides the outcome: rare enough to leave to the full parse.
    if (lx.keyIs(ks, ke, K_ERROR)) return this.once(4) && lx.value(0) === V.Null;
    return lx.value(0) !== V.Bad;
  }

  private usageMember(ks: number, ke: number): boolean {
    const lx = this.lx;
    if (lx.keyIs(ks, ke, K_PROMPT_TOKENS)) {
      if (this.usageSeen & 1) return false;
      this.usageSeen |= 1;
      if (!lx.plainInt()) return false;
      this.fx.promptTokens = lx.lastInt;
      return true;
    }
    if (lx.keyIs(ks, ke, K_COMPLETION_TOKENS)) {
      if (this.usageSeen & 2) return false;
      this.usageSeen |= 2;
      if (!lx.plainInt()) return false;
      this.fx.completionTokens = lx.lastInt;
      return true;
    }
    if (lx.keyIs(ks, ke, K_PROMPT_DETAILS)) return this.details(4, PROMPT_DETAILS);
    if (lx.keyIs(ks, ke, K_COMPLETION_DETAILS)) return this.details(8, COMPLETION_DETAILS);
    return lx.value(0) !== V.Bad;
  }

  /** A `*_details` object of usage, or null (what vLLM sends when the option is off). */
  private details(bit: number, ctx: Ctx): boolean {
    if (this.usageSeen & bit) return false;
    this.usageSeen |= bit;
    if (this.lx.b[this.lx.p] !== LBRACE) return this.lx.value(0) === V.Null;
    this.detailSeen = 0;
    return this.members(ctx);
  }

  /** One member of a details object: `key` (an integer) is read into the facts, `which` 0 cached, 1 reasoning. */
  private detailMember(ks: number, ke: number, key: Buffer, which: 0 | 1): boolean {
    const lx = this.lx;
    if (!lx.keyIs(ks, ke, key)) return lx.value(0) !== V.Bad;
    if (this.detailSeen !== 0 || !lx.plainInt()) return false;
    this.detailSeen = 1;
    if (which === 0) this.fx.cachedTokens = lx.lastInt;
    else this.fx.reasoningTokens = lx.lastInt;
    return true;
  }

  private choices(): boolean {
    const lx = this.lx;
    if (lx.b[lx.p] !== LBRACKET) return false;
    lx.p++;
    lx.ws();
    this.choicesLength = 0;
    if (lx.p < lx.e && lx.b[lx.p] === RBRACKET) {
      lx.p++;
      return true;
    }
    for (;;) {
      if (lx.p >= lx.e || lx.b[lx.p] !== LBRACE) return false;
      if (!this.choice()) return false;
      this.choicesLength++;
      const next = lx.afterItem(RBRACKET);
      if (next === MORE) continue;
      return next === CLOSED;
    }
  }

  private choice(): boolean {
    this.choiceSeen = 0;
    this.textVisible = false;
    this.deltaState = 0;
    this.messageState = 0;
    this.dVisible = this.dReasoning = this.mVisible = this.mReasoning = false;
    if (!this.members(CHOICE)) return false;
    // eventFacts reads `delta ?? message`.
    const useDelta = this.deltaState === 2;
    const useMessage = !useDelta && this.messageState === 2;
    const visible = this.textVisible || (useDelta && this.dVisible) || (useMessage && this.mVisible);
    const reasoning = (useDelta && this.dReasoning) || (useMessage && this.mReasoning);
    if (visible) this.fx.visible = true;
    if (visible || reasoning) this.fx.token = true;
    return true;
  }

  private choiceMember(ks: number, ke: number): boolean {
    const lx = this.lx;
    if (lx.keyIs(ks, ke, K_TEXT)) {
      if (this.choiceSeen & 1) return false;
      this.choiceSeen |= 1;
      const at = lx.p;
      const v = lx.value(0);
      if (v !== V.Null && v !== V.EmptyString && v !== V.String) return false;
      this.textVisible = v === V.String;
      if (this.textVisible) this.noteDecisive(at);
      return true;
    }
    if (lx.keyIs(ks, ke, K_DELTA)) {
      if (this.choiceSeen & 2) return false;
      this.choiceSeen |= 2;
      return this.part(true);
    }
    if (lx.keyIs(ks, ke, K_MESSAGE)) {
      if (this.choiceSeen & 4) return false;
      this.choiceSeen |= 4;
      return this.part(false);
    }
    return lx.value(0) !== V.Bad;
  }

  private part(isDelta: boolean): boolean {
    const lx = this.lx;
    if (lx.b[lx.p] !== LBRACE) {
      if (lx.value(0) !== V.Null) return false;
      if (isDelta) this.deltaState = 1;
      else this.messageState = 1;
      return true;
    }
    this.partSeen = 0;
    this.partVisible = false;
    this.partReasoning = false;
    if (!this.members(PART)) return false;
    if (isDelta) {
      this.deltaState = 2;
      this.dVisible = this.partVisible;
      this.dReasoning = this.partReasoning;
    } else {
      this.messageState = 2;
      this.mVisible = this.partVisible;
      this.mReasoning = this.partReasoning;
    }
    return true;
  }

  private stringOrNull(bit: number): V {
    if (this.partSeen & bit) return V.Bad;
    this.partSeen |= bit;
    const at = this.lx.p;
    const v = this.lx.value(0);
    if (v === V.String) this.noteDecisive(at);
    return v === V.Null || v === V.EmptyString || v === V.String ? v : V.Bad;
  }

  /** A non-empty token string whose opening quote was at `at` (and whose closing quote is at p − 1). */
  private noteDecisive(at: number): void {
    this.decisive++;
    this.decisiveStart = at + 1;
    this.decisiveEnd = this.lx.p - 1;
  }

  private partMember(ks: number, ke: number): boolean {
    const lx = this.lx;
    let v: V;
    if (lx.keyIs(ks, ke, K_CONTENT)) {
      if ((v = this.stringOrNull(1)) === V.Bad) return false;
      if (v === V.String) this.partVisible = true;
      return true;
    }
    if (lx.keyIs(ks, ke, K_REASONING)) {
      if ((v = this.stringOrNull(2)) === V.Bad) return false;
      if (v === V.String) this.partReasoning = true;
      return true;
    }
    if (lx.keyIs(ks, ke, K_REASONING_CONTENT)) {
      if ((v = this.stringOrNull(4)) === V.Bad) return false;
      if (v === V.String) this.partReasoning = true;
      return true;
    }
    // Tool calls carry output: only their absence (null, []) is decided here.
    if (lx.keyIs(ks, ke, K_TOOL_CALLS)) {
      if (this.partSeen & 8) return false;
      this.partSeen |= 8;
      v = lx.value(0);
      return v === V.Null || v === V.EmptyArray;
    }
    if (lx.keyIs(ks, ke, K_FUNCTION_CALL)) {
      if (this.partSeen & 16) return false;
      this.partSeen |= 16;
      return lx.value(0) === V.Null;
    }
    return lx.value(0) !== V.Bad;
  }
}
