/**
 * Per-request timing state: O(1) per chunk, nothing kept that outlives the request.
 * Timestamps are monotonic milliseconds (performance.now()); the record holds seconds.
 */
import { eventFacts, type EventFacts } from '../lib/events.js';
import { UNKNOWN, lastScan, matchTemplate, scanEvent } from './event-scan.js';
import { DROP, GIVE_UP, KEEP, type LineVerdict } from '../lib/sse.js';
import { MESSAGES_API, RESPONSES_API, typedBodyFacts, typedEventFacts, type TypedApi } from '../lib/api-events.js';
import { scanTypedEvent, typedScanTable, type TypedScanTable } from './event-scan-typed.js';
import type { ApiName } from '../record/routes.js';
import { finishReasonsIn, modelIn, responseFactsOf } from './response-facts.js';
import type { MeteringFailure, Outcome, RequestRecord, TokenSource } from '../record/record.js';

const DONE = Buffer.from('[DONE]');
/** A stream whose token events keep differing from the template beyond their token stops making new ones. */
const MAX_TEMPLATE_MISSES = 4;
/** Filled by the byte-level scan; reused, since one event is metered at a time. */
const SCANNED: EventFacts = { token: false, visible: false, promptTokens: -1, completionTokens: -1, cachedTokens: -1, reasoningTokens: -1, error: false, usageOnly: false };
/** A non-streamed JSON body larger than this is relayed but not parsed for usage. */
const MAX_JSON_BODY = 8 * 1024 * 1024;

/** The typed-event APIs' rows and their byte tables, built once. */
const TYPED: Partial<Record<ApiName, { api: TypedApi; table: TypedScanTable }>> = {
  messages: { api: MESSAGES_API, table: typedScanTable(MESSAGES_API) },
  responses: { api: RESPONSES_API, table: typedScanTable(RESPONSES_API) },
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
    const typed = TYPED[api];
    this.typed = typed?.api ?? null;
    this.typedTable = typed?.table ?? null;
    // Decided once: a typed-event stream's handler, or the choices one.
    this.onData = typed ? this.onTypedData : this.onChoicesData;
  }

  private readonly typed: TypedApi | null;
  private readonly typedTable: TypedScanTable | null;
  /** SseFramer's data handler. */
  readonly onData: (buf: Buffer, start: number, end: number) => LineVerdict;

  /** A typed-event stream's data line (Messages, Responses): the same template, scan-or-parse and facts as chat. */
  private readonly onTypedData = (buf: Buffer, start: number, end: number): LineVerdict => {
    const tpl = this.template;
    if (tpl !== null) {
      if (matchTemplate(buf, start, end, tpl, this.templateStart, this.templateEnd)) {
        this.templateHits++;
        this.onTokenChunk(this.templateVisible);
        return KEEP;
      }
      this.templateMisses++;
    }
    let f = SCANNED;
    if (scanTypedEvent(this.typedTable!, buf, start, end, f) === UNKNOWN) {
      let doc: unknown;
      try {
        doc = JSON.parse(buf.toString('utf8', start, end));
      } catch {
        this.failure = 'invalid_json';
        return GIVE_UP;
      }
      f = typedEventFacts(this.typed!, doc);
      if (this.readsResponse && !this.modelLooked) this.lookForModel(doc);
    } else if (this.readsResponse && !this.modelLooked && this.firstToken < 0) {
      // The scan answers response.created (no usage, no token) without a parse: the model it
      // names needs one. Only events before the first token, and only with tracing on.
      try {
        this.lookForModel(JSON.parse(buf.toString('utf8', start, end)));
      } catch {
        // The scan vouched for the JSON; a surprise here costs the span its model, nothing else.
      }
    }
    if (f === SCANNED && lastScan.template && this.templateMisses < MAX_TEMPLATE_MISSES) {
      this.template = Buffer.from(buf.subarray(start, end));
      this.templateStart = lastScan.valueStart - start;
      this.templateEnd = lastScan.valueEnd - start;
      this.templateVisible = f.visible;
    }
    this.noteUsage(f);
    if (f.token) this.onTokenChunk(f.visible);
    return KEEP;
  };

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

  private readonly onChoicesData = (buf: Buffer, start: number, end: number): LineVerdict => {
    if (end - start === DONE.length && buf.compare(DONE, 0, DONE.length, start, end) === 0) return KEEP;
    const tpl = this.template;
    if (tpl !== null) {
      if (matchTemplate(buf, start, end, tpl, this.templateStart, this.templateEnd)) {
        this.templateHits++;
        this.onTokenChunk(this.templateVisible);
        return KEEP;
      }
      this.templateMisses++;
    }
    let f = SCANNED;
    // The byte-level scan answers for nearly every event; what it cannot vouch for is parsed.
    if (scanEvent(buf, start, end, f) === UNKNOWN) {
      let doc: unknown;
      try {
        doc = JSON.parse(buf.toString('utf8', start, end));
      } catch {
        this.failure = 'invalid_json';
        return GIVE_UP;
      }
      f = eventFacts(doc);
      if (this.readsResponse) {
        const model = responseFactsOf(doc, this.finishReasons);
        if (f.token && !this.modelLooked) {
          this.modelLooked = true;
          this.responseModel = model;
        }
      }
    } else if (this.readsResponse) {
      // Not a template hit (a template's finish_reason is null): a finish reason may be here.
      finishReasonsIn(buf, start, end, this.finishReasons);
      if (f.token && !this.modelLooked) {
        this.modelLooked = true;
        this.responseModel = modelIn(buf, start, end);
      }
    }
    if (f === SCANNED && lastScan.template && this.templateMisses < MAX_TEMPLATE_MISSES) {
      this.template = Buffer.from(buf.subarray(start, end));
      this.templateStart = lastScan.valueStart - start;
      this.templateEnd = lastScan.valueEnd - start;
      this.templateVisible = f.visible;
    }
    this.noteUsage(f);
    if (f.token) this.onTokenChunk(f.visible);
    return f.usageOnly && this.stripUsage ? DROP : KEEP;
  };

  readonly onOversized = (): void => {
    this.failure = 'oversized_event';
  };

  private onTokenChunk(visible: boolean): void {
    const now = this.now;
    this.tokenChunks++;
    if (this.firstToken < 0) {
      this.firstToken = now;
      this.inFlightAtFirstToken = this.loop.generationInFlight;
    } else this.pushGap((now - this.lastToken) / 1000);
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
    let doc: unknown;
    try {
      doc = JSON.parse(Buffer.concat(this.jsonParts).toString('utf8'));
    } catch {
      this.failure = 'invalid_json';
      return;
    } finally {
      this.jsonParts = null;
    }
    if (this.typed) {
      this.noteUsage(typedBodyFacts(this.typed, doc));
      if (this.readsResponse) this.responseModel = responseFactsOf(doc, this.finishReasons);
      return;
    }
    this.noteUsage(eventFacts(doc));
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

  toRecord(base: { route: string; operation: string; model: string; status: number; streamed: boolean; outcome: Outcome; end: number; errorType: string | null; tenant: string | null; modelAdmitted?: boolean; upstream?: number }): RequestRecord {
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
    };
  }
}
