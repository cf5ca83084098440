/**
 * From a breach to its cause, on the metrics side: each finished request, judged once by the
 * metrics side (metrics/batch.ts), feeds the slow-request log (served at /debug/requests), a
 * rate-limited warn line when it missed an SLO, and, when tracing is on, its span. The
 * OpenTelemetry SDK is loaded only when tracing is on; spans of records that arrive while
 * it loads wait (bounded, lib/until-ready.ts) and go out once it is ready.
 */
import type { Logger } from 'pino';
import type { EngineKind } from '../../lib/engines.js';
import type { UpstreamSpec } from '../../lib/upstream-spec.js';
import type { TraceSettings } from '../../lib/trace-env.js';
import { UntilReady, loadThenFeed } from '../../lib/until-ready.js';
import { tpotSeconds, type RequestRecord } from '../../record/record.js';
import type { Verdict } from '../../slo/judge.js';
import type { SloName } from '../../slo/config.js';
import type { JudgedBatch } from '../../metrics/batch.js';
import type { BatchConsumer, Routes } from '../../metrics/consumer.js';
import { SlowLog } from './slow-log.js';
import type { SpanExport } from './spans.js';
import { debugRequestsRoutes } from './debug-route.js';

/** One warn line per this many ms at most; the lines in between are counted into the next one. */
const BREACH_LOG_MS = 10_000;
const MAX_PENDING_SPANS = 10_000;

/** What the trail (spans, the slow-request log) reads of the configuration. */
export interface TrailOptions {
  engine: EngineKind;
  upstream: string;
  /** Every upstream, in the record's index order: the breach line names the one a request went to. */
  upstreams: UpstreamSpec[];
  slowLogSize: number;
  slowLogWindow: number;
  traceKeepFailures: boolean;
  tracing: TraceSettings | null;
}

export class RequestTrail implements BatchConsumer {
  readonly name = 'trail';
  readonly slowLog: SlowLog;
  /** Resolves once the span exporter is loaded (null: tracing off or unavailable). */
  readonly spans: Promise<SpanExport | null>;
  /** Spans waiting for the SDK to load (tracing on only). */
  private readonly pending = new UntilReady<RequestRecord>(MAX_PENDING_SPANS);
  private lastBreachLog = -Infinity;
  private breachesUnlogged = 0;
  readonly routes: Routes;

  constructor(
    private readonly config: TrailOptions,
    private readonly log: Logger,
  ) {
    this.slowLog = new SlowLog(config.slowLogSize, config.slowLogWindow);
    this.routes = debugRequestsRoutes(this.slowLog);
    if (config.tracing) {
      this.spans = this.loadSpans(config.tracing);
    } else {
      this.pending.giveUp();
      this.spans = Promise.resolve(null);
    }
  }

  private loadSpans(settings: TraceSettings): Promise<SpanExport | null> {
    this.log.info({ endpoint: settings.endpoint, protocol: settings.protocol, sampler: settings.sampler, ratio: settings.ratio, keepFailures: this.config.traceKeepFailures }, 'OTLP trace export on');
    return loadThenFeed(
      this.pending,
      async () => {
        const [spans, otlp] = await Promise.all([import('./spans.js'), import('../otlp/otlp.js')]);
        return new spans.SpanExport(settings, {
          provider: this.config.engine,
          upstream: new URL(this.config.upstream),
          resource: otlp.buildResource({}),
          scopeVersion: otlp.PACKAGE_VERSION,
        }, this.log);
      },
      (exporter) => (r) => exporter.add(r, Date.now()),
      (err) => this.log.error({ err: err.message }, 'OTLP trace export unavailable: cannot load the OpenTelemetry SDK'),
    );
  }

  ingest(batch: JudgedBatch): void {
    batch.records.forEach((r, i) => {
      const model = batch.labels[i]!;
      const breached = missed(batch.verdicts[i]!);
      this.slowLog.add(r, model, breached);
      if (breached.length > 0 && r.outcome === 'ok') this.logBreach(r, model, breached);
      if (r.traceId !== null && ((r.traceFlags & 1) === 1 || (this.config.traceKeepFailures && (r.outcome !== 'ok' || breached.length > 0)))) {
        // While the SDK loads, the gaps are not part of a span: a waiting record keeps only what its span needs.
        this.pending.push(this.pending.waiting ? { ...r, chunkGaps: null } : r);
      }
    });
  }

  private logBreach(r: RequestRecord, model: string, breached: SloName[]): void {
    const now = performance.now();
    if (now - this.lastBreachLog < BREACH_LOG_MS) {
      this.breachesUnlogged++;
      return;
    }
    this.lastBreachLog = now;
    const since = this.breachesUnlogged;
    this.breachesUnlogged = 0;
    // Every measured latency, so each SLO the line names has its value beside it.
    const tpot = tpotSeconds(r);
    this.log.warn({
      model, upstream: this.config.upstreams[r.upstream]?.name, slo: breached, traceId: r.traceId ?? undefined, ttftSeconds: r.ttft >= 0 ? r.ttft : undefined, ttfoSeconds: r.ttfo >= 0 ? r.ttfo : undefined,
      tpotSeconds: tpot >= 0 ? tpot : undefined, e2eSeconds: r.e2e >= 0 ? r.e2e : undefined,
      outputTokens: r.outputTokens, inFlightAtStart: r.inFlightAtStart, breachesNotLogged: since,
    }, 'a request missed its SLO; see /debug/requests');
  }

  async close(): Promise<void> {
    await (await this.spans)?.shutdown();
  }
}

/** The SLOs a record missed (a failed request misses every SLO it is judged on). */
function missed(verdicts: readonly Verdict[] | null): SloName[] {
  if (!verdicts) return [];
  const out: SloName[] = [];
  for (const v of verdicts) if (!v.good) out.push(v.name);
  return out;
}
