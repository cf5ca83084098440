/**
 * From a breach to its cause, on the metrics side: each finished request is judged once
 * more against its SLOs (a few comparisons) and then feeds the slow-request log, a
 * rate-limited warn line when it missed an SLO, and, when tracing is on, its span. The
 * OpenTelemetry SDK is loaded only when tracing is on; spans of records that arrive while
 * it loads wait (bounded) and go out once it is ready.
 */
import type { Logger } from 'pino';
import type { EngineKind } from '../../lib/engines.js';
import type { TraceSettings } from '../../lib/trace-env.js';
import type { RequestRecord } from '../../record/record.js';
import { judge, type Verdict } from '../../slo/judge.js';
import type { SloConfig, SloName } from '../../slo/config.js';
import { SlowLog } from './slow-log.js';
import type { SpanExport } from './spans.js';

/** One warn line per this many ms at most; the lines in between are counted into the next one. */
const BREACH_LOG_MS = 10_000;
const MAX_PENDING_SPANS = 10_000;

/** What the trail (spans, the slow-request log) reads of the configuration. */
export interface TrailOptions {
  engine: EngineKind;
  upstream: string;
  slos: SloConfig;
  slowLogSize: number;
  slowLogWindow: number;
  traceKeepFailures: boolean;
  tracing: TraceSettings | null;
}

export class RequestTrail {
  readonly slowLog: SlowLog;
  /** Resolves once the span exporter is loaded (null: tracing off or unavailable). */
  readonly spans: Promise<SpanExport | null>;
  private exporter: SpanExport | null = null;
  private pending: RequestRecord[] | null = null;
  private lastBreachLog = -Infinity;
  private breachesUnlogged = 0;
  /** The SLOs requests are judged against: the config's, until a reload replaces them. */
  private slos: SloConfig;

  constructor(
    private readonly config: TrailOptions,
    private readonly log: Logger,
    private readonly modelLabel: (model: string) => string,
  ) {
    this.slos = config.slos;
    this.slowLog = new SlowLog(config.slowLogSize, config.slowLogWindow);
    this.spans = config.tracing ? this.loadSpans() : Promise.resolve(null);
  }

  private loadSpans(): Promise<SpanExport | null> {
    const settings = this.config.tracing!;
    this.pending = [];
    this.log.info({ endpoint: settings.endpoint, protocol: settings.protocol, sampler: settings.sampler, ratio: settings.ratio, keepFailures: this.config.traceKeepFailures }, 'OTLP trace export on');
    return Promise.all([import('./spans.js'), import('../otlp/otlp.js')]).then(
      ([spans, otlp]) => {
        this.exporter = new spans.SpanExport(settings, {
          provider: this.config.engine,
          upstream: new URL(this.config.upstream),
          resource: otlp.buildResource({}),
          scopeVersion: otlp.PACKAGE_VERSION,
        }, this.log);
        for (const r of this.pending ?? []) this.exporter.add(r, Date.now());
        this.pending = null;
        return this.exporter;
      },
      (err: Error) => {
        this.pending = null;
        this.log.error({ err: err.message }, 'OTLP trace export unavailable: cannot load the OpenTelemetry SDK');
        return null;
      },
    );
  }

  /** A config reload's new SLOs: judged from the next record on. */
  setSlos(slos: SloConfig): void {
    this.slos = slos;
  }

  /** `verdicts`: the records' SLO verdicts by index, if the caller judged them (RecordBatch.verdicts). */
  ingest(records: readonly RequestRecord[], verdicts?: readonly (Verdict[] | null)[]): void {
    records.forEach((r, i) => {
      const model = this.modelLabel(r.model);
      const judged = verdicts?.[i];
      const breached = missed(judged !== undefined ? judged : judge(this.slos, model, r));
      this.slowLog.add(r, model, breached);
      if (breached.length > 0 && r.outcome === 'ok') this.logBreach(r, model, breached);
      if (r.traceId !== null && ((r.traceFlags & 1) === 1 || (this.config.traceKeepFailures && (r.outcome !== 'ok' || breached.length > 0)))) {
        if (this.exporter) this.exporter.add(r, Date.now());
        // The gaps are not part of a span: a waiting record keeps only what its span needs.
        else if (this.pending && this.pending.length < MAX_PENDING_SPANS) this.pending.push({ ...r, chunkGaps: null });
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
    this.log.warn({
      model, slo: breached, traceId: r.traceId ?? undefined, ttftSeconds: r.ttft >= 0 ? r.ttft : undefined, e2eSeconds: r.e2e >= 0 ? r.e2e : undefined,
      outputTokens: r.outputTokens, inFlightAtStart: r.inFlightAtStart, breachesNotLogged: since,
    }, 'a request missed its SLO; see /debug/requests');
  }

  async close(): Promise<void> {
    await (await this.spans)?.shutdown();
  }
}

/** The SLOs `r` missed (a failed request misses every SLO it is judged on). */
export function breachedSlos(config: { slos: SloConfig }, model: string, r: RequestRecord): SloName[] {
  return missed(judge(config.slos, model, r));
}

function missed(verdicts: readonly Verdict[] | null): SloName[] {
  if (!verdicts) return [];
  const out: SloName[] = [];
  for (const v of verdicts) if (!v.good) out.push(v.name);
  return out;
}
