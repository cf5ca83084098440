/**
 * Per-request timing state: O(1) per chunk, nothing kept that outlives the request.
 * Timestamps are monotonic milliseconds (performance.now()); the record holds seconds.
 */
import { eventFacts, type EventFacts } from '../lib/events.js';
import { ChatEventScanner, type EventScanner, type ScanResult } from './event-scan.js';
import { matchTemplate } from './json-lex.js';
import { DROP, GIVE_UP, KEEP, type LineVerdict } from '../lib/sse.js';
import { MESSAGES_API, RESPONSES_API, typedBodyFacts, typedEventFacts, type TypedApi } from '../lib/api-events.js';
import { TypedEventScanner, typedScanTable } from './event-scan-typed.js';
import type { ApiName } from '../record/routes.js';
import { finishReasonsIn, modelIn, responseFactsOf } from './response-facts.js';
import type { MeteringFailure, Outcome, RequestRecord, TokenSource } from '../record/record.js';

/** A stream whose token events keep differing from the template beyond their token stops making new ones. */
const MAX_TEMPLATE_MISSES = 4;
/** A non-streamed JSON body larger than this is relayed but not parsed for usage. */
const MAX_JSON_BODY = 8 * 1024 * 1024;
/** What parse() answers for bytes that are not JSON. */
const INVALID = Symbol('invalid JSON');

/**
 * How each API's events are read: the byte scanner, and for a typed-event API its row (the
 * full parse's rules). One scanner per API serves every request of this loop: each event's
 * result is read before the next event is scanned, so nothing is allocated per request either.
 */
const chatScanner = new ChatEventScanner();
const READERS: Record<ApiName, { scanner: EventScanner; typed: TypedApi | null }> = {
  chat: { scanner: chatScanner, typed: null },
  completions: { scanner: chatScanner, typed: null },
  messages: { scanner: new TypedEventScanner(typedScanTable(MESSAGES_API)), typed: MESSAGES_API },
  responses: { scanner: new TypedEventScanner(typedScanTable(RESPONSES_API)), typed: RESPONSES_API },
};

export interface InFlightCount {
  /** Generation requests in flight on this loop (the sink). */
  readonly generationInFlight: number;
}
const NO_LOOP: InFlightCount = { generationInFlight: 0 };

export class RequestMeter {
  firstToken = -1;
  firstOutput = -1;
  private lastToken = -1;
  tokenChunks = 0;
  promptTokens = -1;
  completionTokens = -1;
  cachedTokens = -1;
  reasoningTokens = -1;
  sawErrorEvent = false;
  /** The stream's terminal event came ([DONE], message_stop, response.completed/incomplete/failed). */
  sawTerminal = false;
  /** The longest wait for a token that ended in a reasoning, tool-call or content token, ms (-1: none such). */
  private longestReasoning = -1;
  private longestTool = -1;
  private longestContent = -1;
  failure: MeteringFailure | null = null;
  private gaps: Float32Array | null = null;
  private gapCount = 0;
  private jsonParts: Buffer[] | null = null;
  private jsonBytes = 0;
  /** Set by the caller per chunk, so every event of one read shares the read's arrival time. */
  now = 0;
  /** The last token event the scan accepted as a template (event-scan.ts matchTemplate), and where its token lies. */
  private template: Buffer | null = null;
  private templateStart = 0;
  private templateEnd = 0;
  private templateVisible = false;
  private templateTool = false;
  private templateMisses = 0;
  /** Events answered by the template (tests; a counter costs nothing here). */
  templateHits = 0;

  /**
   * A `background: true` Responses request: the engine answers at once with a queued response and
   * generates later, so the exchange times nothing that means generation (no E2E, no tokens).
   */
  generatesNothing = false;

  /** Requests in flight on this loop when the request arrived, and when its first token did (-1: none yet). */
  inFlightAtStart = 0;
  inFlightAtFirstToken = -1;

  /** What the response said of itself (response-facts.ts): its model, and its finish reasons. */
  responseModel: string | null = null;
  private modelLooked = false;
  readonly finishReasons: string[] = [];
  /** Only spans use the response facts: with tracing off, no event pays for reading them. */
  readsResponse = false;

  /** The request's trace context (trace/context.ts fills it when tracing is on). */
  traceId: string | null = null;
  spanId: string | null = null;
  parentSpanId: string | null = null;
  traceFlags = 0;

  /** What a meter replacing this one (same request, usage injected) carries over. */
  carryTo(next: RequestMeter): void {
    next.generatesNothing = this.generatesNothing;
    next.inFlightAtStart = this.inFlightAtStart;
    next.readsResponse = this.readsResponse;
    next.traceId = this.traceId;
    next.spanId = this.spanId;
    next.parentSpanId = this.parentSpanId;
    next.traceFlags = this.traceFlags;
  }

  constructor(
    readonly t0: number,
    /** Drop the usage-only chunk from what the client sees (we injected include_usage). */
    readonly stripUsage: boolean,
    /** This loop's requests in flight (the sink), read once, at the first token. */
    readonly loop: InFlightCount = NO_LOOP,
    /** Which API's events the response carries (routes.ts): chat and completions share the choices scan. */
    readonly api: ApiName = 'chat',
  ) {
    const reader = READERS[api];
    this.scanner = reader.scanner;
    this.typed = reader.typed;
  }

  private readonly scanner: EventScanner;
  /** The typed-event API's row (Messages, Responses); null for the chat-shaped APIs. */
  private readonly typed: TypedApi | null;

  /**
   * SseFramer's data handler, one for every API: the template, else the byte scan, else the
   * full parse. Only the two rarer paths (the full parse, and reading the response for a span)
   * ask which API this is.
   */
  readonly onData = (buf: Buffer, start: number, end: number): LineVerdict => {
    const tpl = this.template;
    if (tpl !== null) {
      if (matchTemplate(buf, start, end, tpl, this.templateStart, this.templateEnd)) {
        this.templateHits++;
        this.onTokenChunk(this.templateVisible, this.templateTool);
        return KEEP;
      }
      this.templateMisses++;
    }
    let f: EventFacts;
    // The byte-level scan answers for nearly every event; what it cannot vouch for is parsed.
    const scanned = this.scanner.scan(buf, start, end);
    if (scanned !== null) {
      f = scanned.facts;
      if (scanned.tokenStart >= 0 && this.templateMisses < MAX_TEMPLATE_MISSES) this.adopt(buf, start, end, scanned);
      if (this.readsResponse && this.typed === null) this.readScannedResponse(buf, start, end, f);
      else if (this.readsResponse && !this.modelLooked && this.firstToken < 0) this.lookForScannedModel(buf, start, end);
    } else {
      const doc = this.parse(buf.toString('utf8', start, end));
      if (doc === INVALID) return GIVE_UP;
      f = this.typed !== null ? typedEventFacts(this.typed, doc) : eventFacts(doc);
      if (this.readsResponse) this.readParsedResponse(doc, f);
    }
    this.noteUsage(f);
    if (f.token) this.onTokenChunk(f.visible, f.tool);
    if (f.terminal) this.sawTerminal = true;
    return f.usageOnly && this.stripUsage ? DROP : KEEP;
  };

  /** The scanned event becomes the stream's template: a copy, since the read's buffer is reused. */
  private adopt(buf: Buffer, start: number, end: number, scanned: ScanResult): void {
    this.template = Buffer.from(buf.subarray(start, end));
    this.templateStart = scanned.tokenStart - start;
    this.templateEnd = scanned.tokenEnd - start;
    this.templateVisible = scanned.facts.visible;
    this.templateTool = scanned.facts.tool;
  }

  /** JSON.parse, or INVALID with the failure noted (the stream's metering gives up). */
  private parse(text: string): unknown {
    try {
      return JSON.parse(text);
    } catch {
      this.failure = 'invalid_json';
      return INVALID;
    }
  }

  /** A chat-shaped event the scan answered (never a template hit, whose finish_reason is null): a finish reason may be here. */
  /** A typed stream's response.created / message_start answered by the scan: the model it names needs a parse (tracing on, before the first token only). */
  private lookForScannedModel(buf: Buffer, start: number, end: number): void {
    try {
      this.lookForModel(JSON.parse(buf.toString('utf8', start, end)));
    } catch {
      // The scan vouched for the JSON; a surprise here costs the span its model, nothing else.
    }
  }

  private readScannedResponse(buf: Buffer, start: number, end: number, f: EventFacts): void {
    finishReasonsIn(buf, start, end, this.finishReasons);
    if (f.token && !this.modelLooked) {
      this.modelLooked = true;
      this.responseModel = modelIn(buf, start, end);
    }
  }

  private readParsedResponse(doc: unknown, f: EventFacts): void {
    if (this.typed !== null) {
      if (!this.modelLooked) this.lookForModel(doc);
      return;
    }
    const model = responseFactsOf(doc, this.finishReasons);
    if (f.token && !this.modelLooked) {
      this.modelLooked = true;
      this.responseModel = model;
    }
  }

  /** The response model of a typed stream: message_start's message.model, response.created's response.model. */
  private lookForModel(doc: unknown): void {
    const o = doc as Record<string, unknown> | null;
    const holder = o && typeof o === 'object' ? (o['message'] ?? o['response']) : null;
    const model = holder && typeof holder === 'object' ? (holder as Record<string, unknown>)['model'] : null;
    if (typeof model === 'string' && model !== '') {
      this.modelLooked = true;
      this.responseModel = model.slice(0, 128);
    }
  }

  readonly onOversized = (): void => {
    this.failure = 'oversized_event';
  };

  private onTokenChunk(visible: boolean, tool: boolean): void {
    const now = this.now;
    this.tokenChunks++;
    if (this.firstToken < 0) {
      this.firstToken = now;
      this.inFlightAtFirstToken = this.loop.generationInFlight;
    } else {
      const gap = now - this.lastToken;
      this.pushGap(gap / 1000);
      // The silence belongs to the phase of the token that ended it.
      if (tool) {
        if (gap > this.longestTool) this.longestTool = gap;
      } else if (visible) {
        if (gap > this.longestContent) this.longestContent = gap;
      } else if (gap > this.longestReasoning) this.longestReasoning = gap;
    }
    if (visible && this.firstOutput < 0) this.firstOutput = now;
    this.lastToken = now;
  }

  private pushGap(gap: number): void {
    if (!this.gaps) this.gaps = new Float32Array(32);
    else if (this.gapCount === this.gaps.length) {
      const grown = new Float32Array(this.gaps.length * 2);
      grown.set(this.gaps);
      this.gaps = grown;
    }
    this.gaps[this.gapCount++] = gap;
  }

  /** Non-streamed JSON responses: keep the body (bounded) to read usage at the end. */
  collectJson(chunk: Buffer): void {
    if (this.jsonParts === null) {
      if (this.jsonBytes > 0) return; // gave up already
      this.jsonParts = [];
    }
    this.jsonBytes += chunk.length;
    if (this.jsonBytes > MAX_JSON_BODY) {
      this.jsonParts = null;
      return;
    }
    this.jsonParts.push(chunk);
  }

  finishJson(): void {
    if (!this.jsonParts) return;
    const text = Buffer.concat(this.jsonParts).toString('utf8');
    this.jsonParts = null;
    const doc = this.parse(text);
    if (doc === INVALID) return;
    this.noteUsage(this.typed !== null ? typedBodyFacts(this.typed, doc) : eventFacts(doc));
    if (this.readsResponse) this.responseModel = responseFactsOf(doc, this.finishReasons);
  }

  /** The last usage wins: a stream with continuous usage reports running totals. */
  private noteUsage(f: EventFacts): void {
    if (f.promptTokens >= 0) this.promptTokens = f.promptTokens;
    if (f.completionTokens >= 0) this.completionTokens = f.completionTokens;
    if (f.cachedTokens >= 0) this.cachedTokens = f.cachedTokens;
    if (f.reasoningTokens >= 0) this.reasoningTokens = f.reasoningTokens;
    if (f.error) this.sawErrorEvent = true;
  }

  toRecord(base: { route: string; operation: string; model: string; status: number; streamed: boolean; outcome: Outcome; end: number; errorType: string | null; tenant: string | null; modelAdmitted?: boolean; upstream?: number; requestBytes?: number; abortPropagation?: number }): RequestRecord {
    const ok = base.outcome === 'ok';
    let tokenSource: TokenSource = 'none';
    let outputTokens = 0;
    if (this.completionTokens >= 0) {
      tokenSource = 'usage';
      outputTokens = this.completionTokens;
    } else if (this.tokenChunks > 0) {
      tokenSource = 'chunks';
      outputTokens = this.tokenChunks;
    }
    const sec = (t: number) => (t < 0 ? -1 : (t - this.t0) / 1000);
    return {
      route: base.route,
      upstream: base.upstream ?? -1,
      operation: base.operation,
      model: base.model,
      outcome: base.outcome,
      status: base.status,
      streamed: base.streamed,
      ttft: ok && base.streamed ? sec(this.firstToken) : -1,
      ttfo: ok && base.streamed ? sec(this.firstOutput) : -1,
      e2e: base.end < 0 || this.generatesNothing ? -1 : (base.end - this.t0) / 1000,
      inputTokens: Math.max(0, this.promptTokens),
      outputTokens,
      tokenSource,
      // A view, not a copy: the meter ends with the record, and the record is encoded at once.
      chunkGaps: this.gaps ? this.gaps.subarray(0, this.gapCount) : null,
      meteringFailure: this.failure,
      errorType: base.errorType,
      startedAt: performance.timeOrigin + this.t0,
      inputTokensKnown: this.promptTokens >= 0,
      modelAdmitted: base.modelAdmitted ?? false,
      inFlightAtStart: this.inFlightAtStart,
      inFlightAtFirstToken: this.inFlightAtFirstToken,
      cachedInputTokens: this.cachedTokens,
      reasoningTokens: this.reasoningTokens,
      tenant: base.tenant,
      traceId: this.traceId,
      spanId: this.spanId,
      parentSpanId: this.parentSpanId,
      traceFlags: this.traceFlags,
      responseModel: this.responseModel,
      finishReasons: this.finishReasons.length > 0 ? this.finishReasons.join(',') : null,
      terminal: this.sawTerminal,
      // Before the first token: until it came, else until the stream ended (a stall, an abort).
      silenceFirst: !base.streamed ? -1 : this.firstToken >= 0 ? (this.firstToken - this.t0) / 1000 : ((base.end >= 0 ? base.end : performance.now()) - this.t0) / 1000,
      silenceReasoning: this.longestReasoning < 0 ? -1 : this.longestReasoning / 1000,
      silenceTool: this.longestTool < 0 ? -1 : this.longestTool / 1000,
      silenceContent: this.longestContent < 0 ? -1 : this.longestContent / 1000,
      requestBytes: base.requestBytes ?? 0,
      abortPropagation: base.abortPropagation ?? -1,
    };
  }
}
