/**
 * One OpenTelemetry span per proxied request, built on the metrics side from the request
 * record, with the ids the proxy minted (so the upstream's own spans, parented by the
 * traceparent the proxy sent, land under it). Loaded only when tracing is on (start.ts):
 * the SDK's batching processor and the OTLP exporter for the configured protocol do the
 * rest. GenAI semantic conventions; never a prompt, a completion, a header value or a key.
 */
import { createRequire } from 'node:module';
import { SpanKind, SpanStatusCode, type Attributes, type HrTime } from '@opentelemetry/api';
import type { Resource } from '@opentelemetry/resources';
import { BatchSpanProcessor, type ReadableSpan, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { OTLPTraceExporter as ProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import type { Logger } from 'pino';
import type { OtlpProtocol } from '../../lib/otel-env.js';
import { tpotSeconds, type RequestRecord } from '../../record/record.js';
import type { TraceSettings } from '../../lib/trace-env.js';

const require = createRequire(import.meta.url);

const EXPORTERS: Record<OtlpProtocol, (url: string) => SpanExporter> = {
  'http/protobuf': (url) => new ProtoExporter({ url }),
  'http/json': (url) => new JsonExporter({ url }),
  grpc: (url) => {
    const mod = require('@opentelemetry/exporter-trace-otlp-grpc') as typeof import('@opentelemetry/exporter-trace-otlp-grpc');
    return new mod.OTLPTraceExporter({ url });
  },
};

/** How long a span waits for its batch by default (the SDK's is 5000 ms). */
export const DEFAULT_SCHEDULE_DELAY_MS = 1000;

export interface SpanOptions {
  provider: string;
  /** The upstream's host and port (server.address / server.port). */
  upstream: URL;
  resource: Resource;
  scopeVersion: string;
}

function hrTime(epochMs: number): HrTime {
  const s = Math.floor(epochMs / 1000);
  return [s, Math.round((epochMs - s * 1000) * 1e6)];
}

/** The span of a finished request; `endMs` stands in for the end a failed request did not record. */
export function spanOf(r: RequestRecord, opts: SpanOptions, endMs: number): ReadableSpan {
  const start = r.startedAt;
  const end = r.e2e >= 0 ? start + r.e2e * 1000 : Math.max(start, endMs);
  const attributes: Attributes = {
    'gen_ai.operation.name': r.operation,
    'gen_ai.provider.name': opts.provider,
    'server.address': opts.upstream.hostname,
    'server.port': Number(opts.upstream.port || (opts.upstream.protocol === 'https:' ? 443 : 80)),
    'infermeter.route': r.route,
    'infermeter.outcome': r.outcome,
    'infermeter.streamed': r.streamed,
    'infermeter.in_flight_at_start': r.inFlightAtStart,
  };
  if (r.model) attributes['gen_ai.request.model'] = r.model;
  if (r.responseModel) attributes['gen_ai.response.model'] = r.responseModel;
  if (r.finishReasons) attributes['gen_ai.response.finish_reasons'] = r.finishReasons.split(',');
  if (r.status > 0) attributes['http.response.status_code'] = r.status;
  if (r.inputTokensKnown) attributes['gen_ai.usage.input_tokens'] = r.inputTokens;
  if (r.tokenSource !== 'none') attributes['gen_ai.usage.output_tokens'] = r.outputTokens;
  if (r.tokenSource !== 'none') attributes['infermeter.output_token_source'] = r.tokenSource;
  if (r.cachedInputTokens >= 0) attributes['gen_ai.usage.cache_read.input_tokens'] = r.cachedInputTokens;
  if (r.reasoningTokens >= 0) attributes['gen_ai.usage.reasoning.output_tokens'] = r.reasoningTokens;
  if (r.ttft >= 0) attributes['infermeter.ttft_seconds'] = r.ttft;
  if (r.ttfo >= 0) attributes['infermeter.ttfo_seconds'] = r.ttfo;
  const tpot = tpotSeconds(r);
  if (tpot >= 0) attributes['infermeter.tpot_seconds'] = tpot;
  if (r.e2e >= 0) attributes['infermeter.e2e_seconds'] = r.e2e;
  if (r.meteringFailure) attributes['infermeter.metering_failure'] = r.meteringFailure;
  const failed = r.outcome !== 'ok';
  if (failed) attributes['error.type'] = r.errorType ?? r.outcome;
  const startTime = hrTime(start);
  const endTime = hrTime(end);
  const durationMs = end - start;
  const traceId = r.traceId!;
  // Only the ids: a closure over `r` would keep the whole record (its gaps too) alive in the export queue.
  const spanId = r.spanId!;
  return {
    name: r.model ? `${r.operation} ${r.model}` : r.operation,
    // A gateway span is the client of the model server (GenAI spans are CLIENT); the server's spans hang below.
    kind: SpanKind.CLIENT,
    // Exported means recorded: a span kept for failing was unsampled on the wire, but is sampled here.
    spanContext: () => ({ traceId, spanId, traceFlags: 1 }),
    parentSpanContext: r.parentSpanId ? { traceId, spanId: r.parentSpanId, traceFlags: r.traceFlags, isRemote: true } : undefined,
    startTime,
    endTime,
    duration: hrTime(durationMs),
    status: failed ? { code: SpanStatusCode.ERROR, message: r.errorType ?? r.outcome } : { code: SpanStatusCode.UNSET },
    attributes,
    links: [],
    events: r.ttft >= 0 ? [{ name: 'gen_ai.first_token', time: hrTime(start + r.ttft * 1000), attributes: { 'infermeter.ttft_seconds': r.ttft } }] : [],
    ended: true,
    resource: opts.resource,
    instrumentationScope: { name: 'infermeter', version: opts.scopeVersion },
    droppedAttributesCount: 0,
    droppedEventsCount: 0,
    droppedLinksCount: 0,
  };
}

/** An exporter that logs a failure streak once (and its end), not once per batch. */
class ReportingSpanExporter implements SpanExporter {
  failureStreak = 0;
  exported = 0;

  constructor(
    private readonly inner: SpanExporter,
    private readonly log: Logger,
    private readonly endpoint: string,
  ) {}

  export(spans: ReadableSpan[], done: Parameters<SpanExporter['export']>[1]): void {
    this.inner.export(spans, (result) => {
      if (result.code === 0) {
        this.exported += spans.length;
        if (this.failureStreak > 0) this.log.info({ endpoint: this.endpoint, failedExports: this.failureStreak }, 'OTLP span export recovered');
        this.failureStreak = 0;
      } else if (this.failureStreak++ === 0) {
        this.log.warn({ endpoint: this.endpoint, err: result.error?.message ?? 'unknown error' }, 'OTLP span export failed; spans of this batch are lost, logged again only on recovery');
      }
      done(result);
    });
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }
}

/** Spans out through the SDK's batching processor (OTEL_BSP_* honoured), to the configured OTLP endpoint. */
export class SpanExport {
  private readonly processor: BatchSpanProcessor;
  readonly exporter: ReportingSpanExporter;

  constructor(
    settings: TraceSettings,
    private readonly opts: SpanOptions,
    log: Logger,
    exporter: SpanExporter = EXPORTERS[settings.protocol](settings.endpoint),
  ) {
    this.exporter = new ReportingSpanExporter(exporter, log, settings.endpoint);
    // Spans waiting in the queue survive young-generation collections and get promoted: a
    // shorter default delay than the SDK's 5 s keeps fewer of them (OTEL_BSP_SCHEDULE_DELAY still wins).
    const delay = process.env['OTEL_BSP_SCHEDULE_DELAY'] === undefined ? { scheduledDelayMillis: DEFAULT_SCHEDULE_DELAY_MS } : {};
    this.processor = new BatchSpanProcessor(this.exporter, delay);
  }

  add(r: RequestRecord, nowMs: number): void {
    this.processor.onEnd(spanOf(r, this.opts, nowMs));
  }

  forceFlush(): Promise<void> {
    return this.processor.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.processor.shutdown();
  }
}
