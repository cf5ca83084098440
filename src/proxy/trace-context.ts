/**
 * W3C trace context on the proxy loop: parse the client's `traceparent`, mint infermeter's
 * span id (and a trace id for a root), decide the sampled flag, and hand the upstream a
 * `traceparent` whose parent is infermeter's span. Per request, never per chunk: one regex
 * test, two hex slices of a pooled random buffer, one string concatenation. The span itself
 * is built on the metrics side from the record (spans.ts).
 */
import { randomFillSync } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { SamplerName, TraceSettings } from '../lib/trace-env.js';

/** version-traceid-parentid-flags; a future version may append fields after a dash. */
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-[^]*)?$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);

export interface IncomingContext {
  traceId: string;
  spanId: string;
  sampled: boolean;
}

/** The client's context, or null when absent or invalid (W3C: then start a new trace). */
export function parseTraceparent(value: string | string[] | undefined): IncomingContext | null {
  // Two traceparent headers are invalid (Node joins repeats of unknown headers with ", ").
  if (typeof value !== 'string' || value.length < 55) return null;
  const m = TRACEPARENT.exec(value);
  if (!m) return null;
  const [, version, traceId, spanId, flags, rest] = m;
  if (version === 'ff' || (version === '00' && rest !== undefined)) return null;
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return null;
  return { traceId: traceId!, spanId: spanId!, sampled: (parseInt(flags!, 16) & 1) === 1 };
}

/** Random ids from one buffer refilled when used up: a syscall per 512 spans, not per request. */
export class IdPool {
  private readonly buf: Buffer;
  private pos: number;

  constructor(bytes = 8192) {
    this.buf = Buffer.allocUnsafe(bytes);
    this.pos = bytes;
  }

  private take(n: number): string {
    if (this.pos + n > this.buf.length) {
      randomFillSync(this.buf);
      this.pos = 0;
    }
    const hex = this.buf.toString('hex', this.pos, this.pos + n);
    this.pos += n;
    return hex;
  }

  traceId(): string {
    const id = this.take(16);
    return id === ZERO_TRACE ? this.traceId() : id;
  }

  spanId(): string {
    const id = this.take(8);
    return id === ZERO_SPAN ? this.spanId() : id;
  }
}

/** Where the proxy keeps a request's context (RequestMeter holds these fields). */
export interface TraceSlots {
  traceId: string | null;
  spanId: string | null;
  parentSpanId: string | null;
  traceFlags: number;
}

export type RootSampler = (traceId: string) => boolean;

/** TraceIdRatioBased on the trace id's low 52 bits (random in W3C level 2 ids), exact in a double. */
export function ratioSampler(ratio: number): RootSampler {
  if (ratio >= 1) return () => true;
  if (ratio <= 0) return () => false;
  const bound = ratio * 2 ** 52;
  return (traceId) => parseInt(traceId.slice(19), 16) < bound;
}

/** OTEL_TRACES_SAMPLER as one function, resolved at startup: (trace id, parent or null) → sampled. */
export function samplerFor(name: SamplerName, ratio: number): (traceId: string, parent: IncomingContext | null) => boolean {
  const root: RootSampler = name.endsWith('always_on') ? () => true : name.endsWith('always_off') ? () => false : ratioSampler(ratio);
  if (!name.startsWith('parentbased_')) return (traceId) => root(traceId);
  return (traceId, parent) => (parent ? parent.sampled : root(traceId));
}

/** What the proxy does per request when tracing is on. */
export class TracePropagator {
  private readonly ids = new IdPool();
  private readonly sample: (traceId: string, parent: IncomingContext | null) => boolean;

  constructor(settings: Pick<TraceSettings, 'sampler' | 'ratio'>) {
    this.sample = samplerFor(settings.sampler, settings.ratio);
  }

  /** Fills `slots` from the client's headers: a child of the client's span, or a new root. */
  start(headers: IncomingHttpHeaders, slots: TraceSlots): void {
    const parent = parseTraceparent(headers['traceparent']);
    const traceId = parent ? parent.traceId : this.ids.traceId();
    slots.traceId = traceId;
    slots.spanId = this.ids.spanId();
    slots.parentSpanId = parent ? parent.spanId : null;
    slots.traceFlags = this.sample(traceId, parent) ? 1 : 0;
  }

  /**
   * The upstream's headers: traceparent names infermeter's span as parent. tracestate passes
   * as the client sent it, unless its traceparent was unusable (W3C: then it is dropped).
   */
  static rewrite(out: Record<string, string | string[]>, slots: TraceSlots): void {
    if (slots.traceId === null) return;
    if (slots.parentSpanId === null) delete out['tracestate'];
    out['traceparent'] = `00-${slots.traceId}-${slots.spanId}-0${slots.traceFlags}`;
  }
}
