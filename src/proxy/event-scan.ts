/**
 * The byte-level fast path of metering: reads what `eventFacts(JSON.parse(event))` would
 * say of one streaming event straight from its bytes, without decoding a string or building
 * an object. Nearly every event of a stream is a token delta, a role chunk or a finish
 * chunk; those are answered here. Anything the scanner cannot vouch for exactly — an
 * escaped key, a non-null error, tool calls, a non-string content, a duplicate key it
 * cares about, anything that is not strictly valid JSON — answers UNKNOWN, and the caller
 * takes the full parse. So the fast path never decides differently from the full one
 * (test/unit/proxy/event-scan.test.ts checks that on every fixture and on random events).
 *
 * The scanner is a strict JSON tokenizer that tracks only the paths metering reads:
 * `choices[].delta|message.{content,reasoning,reasoning_content,tool_calls,function_call}`,
 * `choices[].text`, `usage.{prompt_tokens,completion_tokens}`,
 * `usage.prompt_tokens_details.cached_tokens`, `usage.completion_tokens_details.reasoning_tokens`
 * and `error`. The two detail paths matter for speed: vLLM's `continuous_usage_stats` puts usage
 * (with `prompt_tokens_details` under `--enable-prompt-tokens-details`) in every chunk, so a
 * usage shape the scan did not know would send every event of such a stream to JSON.parse.
 */
import type { EventFacts } from '../lib/events.js';

export const UNKNOWN = 0;
export const KNOWN = 1;
import {
  S, V, QUOTE, BACKSLASH, COLON, LBRACE, RBRACE, LBRACKET, RBRACKET, MORE, CLOSED, ws, afterItem, keyIs, plainInt, value,
} from './json-lex.js';

export { matchTemplate } from './json-lex.js';

// Path state: module-level so a scan allocates nothing (the proxy loop is single-threaded).
/** Non-empty token strings seen (content, reasoning, reasoning_content, text), and where the last one's bytes are. */
let decisive = 0;
let decisiveStart = -1;
let decisiveEnd = -1;

/**
 * What the last KNOWN scan says about reusing it as a template (see matchTemplate): whether
 * the event was one token string in one choice, with no usage, and where that string's bytes
 * lie in the buffer.
 */
export const lastScan = { template: false, valueStart: -1, valueEnd: -1 };
/** The caller's facts, filled in as the scan goes (left unspecified when it answers UNKNOWN). */
let fx: EventFacts;

/**
 * Scans the event in `buf[start, end)`. Returns KNOWN with `facts` filled in exactly as
 * `eventFacts(JSON.parse(...))` would fill them, or UNKNOWN (and `facts` says nothing).
 */
export function scanEvent(buf: Buffer, start: number, end: number, facts: EventFacts): typeof KNOWN | typeof UNKNOWN {
  S.b = buf;
  S.p = start;
  S.e = end;
  fx = facts;
  fx.token = false;
  fx.visible = false;
  fx.promptTokens = -1;
  fx.completionTokens = -1;
  fx.cachedTokens = -1;
  fx.reasoningTokens = -1;
  fx.error = false;
  fx.usageOnly = false;
  decisive = 0;
  lastScan.template = false;
  ws();
  if (S.p >= S.e || S.b[S.p] !== LBRACE) return UNKNOWN;
  if (!root()) return UNKNOWN;
  ws();
  if (S.p !== S.e) return UNKNOWN;
  lastScan.template = fx.token && decisive === 1 && choicesLength === 1 && !usageObject;
  lastScan.valueStart = decisiveStart;
  lastScan.valueEnd = decisiveEnd;
  return KNOWN;
}

/**
 * Walks an object's members, calling `member(ctx, keyStart, keyEnd)` at each value (with
 * `p` at the value). Returns false on anything unexpected. Keys with escapes give up: they
 * could spell a key metering reads.
 */
const ROOT = 0;
const USAGE = 1;
const CHOICE = 2;
const PART = 3;
const PROMPT_DETAILS = 4;
const COMPLETION_DETAILS = 5;
type Ctx = typeof ROOT | typeof USAGE | typeof CHOICE | typeof PART | typeof PROMPT_DETAILS | typeof COMPLETION_DETAILS;

/** One member's value, by the object it is in (a switch keeps every call site monomorphic). */
function member(ctx: Ctx, ks: number, ke: number): boolean {
  switch (ctx) {
    case ROOT:
      return rootMember(ks, ke);
    case USAGE:
      return usageMember(ks, ke);
    case CHOICE:
      return choiceMember(ks, ke);
    case PROMPT_DETAILS:
      return detailMember(ks, ke, K_CACHED_TOKENS, 0);
    case COMPLETION_DETAILS:
      return detailMember(ks, ke, K_REASONING_TOKENS, 1);
    default:
      return partMember(ks, ke);
  }
}

function members(ctx: Ctx): boolean {
  S.p++; // {
  ws();
  if (S.p < S.e && S.b[S.p] === RBRACE) {
    S.p++;
    return true;
  }
  for (;;) {
    if (S.p >= S.e || S.b[S.p] !== QUOTE) return false;
    const ks = S.p + 1;
    const buf = S.b;
    const end = S.e;
    let q = ks;
    for (; q < end; q++) {
      const c = buf[q]!;
      if (c === QUOTE) break;
      if (c === BACKSLASH || c < 0x20) return false;
    }
    if (q >= end) return false;
    S.p = q + 1;
    ws();
    if (S.p >= S.e || S.b[S.p] !== COLON) return false;
    S.p++;
    ws();
    if (!member(ctx, ks, q)) return false;
    const next = afterItem(RBRACE);
    if (next === MORE) continue;
    return next === CLOSED ? true : false;
  }
}


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

// Per-object "seen" bits, so a duplicate key metering reads gives up (JSON.parse keeps the last).
let rootSeen = 0;
let choicesLength = -1;
let usageObject = false;

function root(): boolean {
  rootSeen = 0;
  usageSeen = 0;
  choicesLength = -1;
  usageObject = false;
  if (!members(ROOT)) return false;
  fx.usageOnly = usageObject && choicesLength === 0;
  return true;
}

function once(bit: number): boolean {
  if (rootSeen & bit) return false;
  rootSeen |= bit;
  return true;
}

function rootMember(ks: number, ke: number): boolean {
  if (keyIs(ks, ke, K_CHOICES)) return once(1) && choices();
  if (keyIs(ks, ke, K_USAGE)) {
    if (!once(2)) return false;
    if (S.b[S.p] === LBRACE) {
      usageObject = true;
      return members(USAGE);
    }
    return value(0) === V.Null;
  }
  // A non-null error decides the outcome: rare enough to leave to the full parse.
  if (keyIs(ks, ke, K_ERROR)) return once(4) && value(0) === V.Null;
  return value(0) !== V.Bad;
}

let usageSeen = 0;
function usageMember(ks: number, ke: number): boolean {
  if (keyIs(ks, ke, K_PROMPT_TOKENS)) {
    if (usageSeen & 1) return false;
    usageSeen |= 1;
    if (!plainInt()) return false;
    fx.promptTokens = S.lastInt;
    return true;
  }
  if (keyIs(ks, ke, K_COMPLETION_TOKENS)) {
    if (usageSeen & 2) return false;
    usageSeen |= 2;
    if (!plainInt()) return false;
    fx.completionTokens = S.lastInt;
    return true;
  }
  if (keyIs(ks, ke, K_PROMPT_DETAILS)) return details(4, PROMPT_DETAILS);
  if (keyIs(ks, ke, K_COMPLETION_DETAILS)) return details(8, COMPLETION_DETAILS);
  return value(0) !== V.Bad;
}

/** A `*_details` object of usage, or null (what vLLM sends when the option is off). */
function details(bit: number, ctx: Ctx): boolean {
  if (usageSeen & bit) return false;
  usageSeen |= bit;
  if (S.b[S.p] !== LBRACE) return value(0) === V.Null;
  detailSeen = 0;
  return members(ctx);
}

let detailSeen = 0;
/** One member of a details object: `key` (an integer) is read into the facts, `which` 0 cached, 1 reasoning. */
function detailMember(ks: number, ke: number, key: Buffer, which: 0 | 1): boolean {
  if (!keyIs(ks, ke, key)) return value(0) !== V.Bad;
  if (detailSeen !== 0 || !plainInt()) return false;
  detailSeen = 1;
  if (which === 0) fx.cachedTokens = S.lastInt;
  else fx.reasoningTokens = S.lastInt;
  return true;
}

function choices(): boolean {
  if (S.b[S.p] !== LBRACKET) return false;
  S.p++;
  ws();
  choicesLength = 0;
  if (S.p < S.e && S.b[S.p] === RBRACKET) {
    S.p++;
    return true;
  }
  for (;;) {
    if (S.p >= S.e || S.b[S.p] !== LBRACE) return false;
    if (!choice()) return false;
    choicesLength++;
    const next = afterItem(RBRACKET);
    if (next === MORE) continue;
    return next === CLOSED ? true : false;
  }
}

// One choice's state.
let choiceSeen = 0;
let textVisible = false;
let deltaState = 0; // 0 absent, 1 null, 2 object
let messageState = 0;
// What the delta (or message) said: whichever eventFacts would read.
let dVisible = false;
let dReasoning = false;
let mVisible = false;
let mReasoning = false;
let partSeen = 0;

function choice(): boolean {
  choiceSeen = 0;
  textVisible = false;
  deltaState = 0;
  messageState = 0;
  dVisible = dReasoning = mVisible = mReasoning = false;
  if (!members(CHOICE)) return false;
  // eventFacts reads `delta ?? message`.
  const useDelta = deltaState === 2;
  const useMessage = !useDelta && messageState === 2;
  const visible = textVisible || (useDelta && dVisible) || (useMessage && mVisible);
  const reasoning = (useDelta && dReasoning) || (useMessage && mReasoning);
  if (visible) fx.visible = true;
  if (visible || reasoning) fx.token = true;
  return true;
}

function choiceMember(ks: number, ke: number): boolean {
  if (keyIs(ks, ke, K_TEXT)) {
    if (choiceSeen & 1) return false;
    choiceSeen |= 1;
    const at = S.p;
    const v = value(0);
    if (v !== V.Null && v !== V.EmptyString && v !== V.String) return false;
    textVisible = v === V.String;
    if (textVisible) noteDecisive(at);
    return true;
  }
  if (keyIs(ks, ke, K_DELTA)) {
    if (choiceSeen & 2) return false;
    choiceSeen |= 2;
    return part(true);
  }
  if (keyIs(ks, ke, K_MESSAGE)) {
    if (choiceSeen & 4) return false;
    choiceSeen |= 4;
    return part(false);
  }
  return value(0) !== V.Bad;
}

let partVisible = false;
let partReasoning = false;
function part(isDelta: boolean): boolean {
  if (S.b[S.p] !== LBRACE) {
    if (value(0) !== V.Null) return false;
    if (isDelta) deltaState = 1;
    else messageState = 1;
    return true;
  }
  partSeen = 0;
  partVisible = false;
  partReasoning = false;
  if (!members(PART)) return false;
  if (isDelta) {
    deltaState = 2;
    dVisible = partVisible;
    dReasoning = partReasoning;
  } else {
    messageState = 2;
    mVisible = partVisible;
    mReasoning = partReasoning;
  }
  return true;
}

function stringOrNull(bit: number): V {
  if (partSeen & bit) return V.Bad;
  partSeen |= bit;
  const at = S.p;
  const v = value(0);
  if (v === V.String) noteDecisive(at);
  return v === V.Null || v === V.EmptyString || v === V.String ? v : V.Bad;
}

/** A non-empty token string whose opening quote was at `at` (and whose closing quote is at p − 1). */
function noteDecisive(at: number): void {
  decisive++;
  decisiveStart = at + 1;
  decisiveEnd = S.p - 1;
}

function partMember(ks: number, ke: number): boolean {
  let v: V;
  if (keyIs(ks, ke, K_CONTENT)) {
    if ((v = stringOrNull(1)) === V.Bad) return false;
    if (v === V.String) partVisible = true;
    return true;
  }
  if (keyIs(ks, ke, K_REASONING)) {
    if ((v = stringOrNull(2)) === V.Bad) return false;
    if (v === V.String) partReasoning = true;
    return true;
  }
  if (keyIs(ks, ke, K_REASONING_CONTENT)) {
    if ((v = stringOrNull(4)) === V.Bad) return false;
    if (v === V.String) partReasoning = true;
    return true;
  }
  // Tool calls carry output: only their absence (null, []) is decided here.
  if (keyIs(ks, ke, K_TOOL_CALLS)) {
    if (partSeen & 8) return false;
    partSeen |= 8;
    v = value(0);
    return v === V.Null || v === V.EmptyArray;
  }
  if (keyIs(ks, ke, K_FUNCTION_CALL)) {
    if (partSeen & 16) return false;
    partSeen |= 16;
    return value(0) === V.Null;
  }
  return value(0) !== V.Bad;
}

