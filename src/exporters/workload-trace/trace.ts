/**
 * The workload trace (--workload-trace FILE): one JSON line per finished generation request,
 * in the Mooncake format and with infermeter's own fields (docs/workload-trace.md). A row of
 * the consumer table and a reader of the prompt block hashing (metrics/prompt/blocks.ts): the
 * judged batch reaches it through the hashing stage, which hands over each request with its
 * chain of prefix ids once they are cut. It samples, never waits: what it leaves out is
 * counted, in the sidecar and in infermeter_workload_trace_requests_total.
 *
 * With --workers, every worker's records reach the one metrics side, so one trace holds them all.
 */
import type { Logger } from 'pino';
import type { Counter, Gauge, Registry } from 'prom-client';
import { Counter as PromCounter } from 'prom-client';
import { gauge } from '../../lib/metric-def.js';
import { UntilReady, loadThenFeed } from '../../lib/until-ready.js';
import type { UpstreamSpec } from '../../lib/upstream-spec.js';
import { WORKLOAD_TRACE_METRICS } from '../../metrics/catalog.js';
import type { BatchConsumer } from '../../metrics/consumer.js';
import type { HashedRequest, PromptBlocksStage, PromptReader } from '../../metrics/prompt/blocks.js';
import { PACKAGE_VERSION } from '../otlp/otlp.js';
import type { MachineReader } from '../../collectors/snapshot.js';
import { TraceFiles, type SidecarEngine, type TraceFacts } from './file.js';
import { traceLine, type LineFacts } from './line.js';
import type { WorkloadTraceOptions } from './options.js';
import type { TraceLogs } from './otlp-logs.js';

/** The sidecar of the file being written is rewritten this often. */
export const SIDECAR_REFRESH_MS = 10_000;
/** Models listed in the sidecar's `cut` (the request's model is the client's to choose). */
const MAX_MODELS_LISTED = 64;
/** Lines that wait for the OTLP exporter to load. */
const MAX_PENDING_LOG_BATCHES = 500;

export interface WorkloadTraceSettings extends WorkloadTraceOptions {
  upstreams: readonly UpstreamSpec[];
  promptCharsPerToken: number;
}

type Result = 'written' | 'sampled' | 'busy' | 'unreadable' | 'failed';

export class WorkloadTrace implements BatchConsumer, PromptReader {
  readonly name = 'workload-trace';
  readonly blockTokens: number;
  readonly sample: number;
  private readonly startUnixMs = Date.now();
  private readonly files: TraceFiles;
  private readonly facts: LineFacts;
  private readonly cut: TraceFacts['cut'] = {};
  /** Each upstream's cache as last reported: kept when a later scrape misses, so a dead collector erases nothing. */
  private readonly engines: Record<string, SidecarEngine> = {};
  private readonly requests: Counter;
  private readonly kept: Gauge;
  private readonly writing: Gauge;
  private readonly totals = { seen: 0, written: 0 };
  private stopped = false;
  private timer: NodeJS.Timeout | null = null;
  private readonly logs: UntilReady<{ text: string; at: number; model: string; api: string }[]> | null;
  private logsReady: Promise<TraceLogs | null> | null = null;

  constructor(
    private readonly opts: WorkloadTraceSettings,
    stage: PromptBlocksStage,
    registry: Registry,
    private readonly log: Logger,
    /** The collectors' readings: the engines' cache sizes for the sidecar. */
    private readonly machine: MachineReader | null = null,
  ) {
    this.blockTokens = opts.workloadTraceBlockTokens;
    this.sample = opts.workloadTraceSample;
    this.facts = { startUnixMs: this.startUnixMs, blockTokens: this.blockTokens, upstreams: opts.upstreams.map((u) => u.name) };
    this.files = new TraceFiles(opts.workloadTrace, opts.workloadTraceMaxSize, opts.workloadTraceMaxFiles, () => this.traceFacts());
    const [requests, kept, writing] = WORKLOAD_TRACE_METRICS;
    this.requests = new PromCounter({ name: requests.name, help: requests.help, labelNames: [...requests.labels], registers: [registry] });
    for (const result of ['written', 'sampled', 'busy', 'unreadable', 'failed'] as const) this.requests.inc({ result }, 0);
    this.kept = gauge(registry, kept);
    this.writing = gauge(registry, writing);
    this.logs = opts.workloadTraceOtlp ? new UntilReady(MAX_PENDING_LOG_BATCHES) : null;
    stage.subscribe(this);
  }

  start(): void {
    try {
      this.files.open();
      this.writing.set(1);
    } catch (err) {
      this.stop(err as Error);
    }
    this.kept.set(1);
    this.timer = setInterval(() => this.refresh(), SIDECAR_REFRESH_MS);
    this.timer.unref();
    if (this.logs) {
      const logs = this.logs;
      this.logsReady = loadThenFeed(
        logs,
        async () => (await import('./otlp-logs.js')).createTraceLogs({ startUnixMs: this.startUnixMs, blockTokens: this.blockTokens }, this.log),
        (exporter) => (batch) => exporter.emit(batch),
        (err) => this.log.error({ err: err.message }, 'workload trace over OTLP unavailable: cannot load the OpenTelemetry SDK'),
      );
    }
  }

  /** Records reach the trace through the prompt hashing stage (read), not here. */
  ingest(): void {}

  read(requests: readonly HashedRequest[]): void {
    const lines: { text: string; timestamp: number }[] = [];
    const logged: { text: string; at: number; model: string; api: string }[] = [];
    for (const h of requests) {
      const result = this.judge(h);
      this.totals.seen++;
      if (result !== 'failed') this.files.seen(result === 'written' ? null : result);
      if (result !== 'written') {
        this.requests.inc({ result });
        continue;
      }
      const line = traceLine(h.record, h.blocks!, h, this.facts);
      const text = JSON.stringify(line);
      lines.push({ text, timestamp: line.timestamp });
      if (this.logs) logged.push({ text, at: this.startUnixMs + line.timestamp, model: line.model, api: line.api });
      this.noteCut(h);
    }
    if (lines.length > 0) this.write(lines);
    this.kept.set(this.totals.seen === 0 ? 1 : this.totals.written / this.totals.seen);
    if (logged.length > 0 && !this.stopped) this.logs!.push(logged);
  }

  /** A batch's lines: written, or (the write failed, the trace stops) counted as failed. */
  private write(lines: { text: string; timestamp: number }[]): void {
    const before = this.files.linesWritten;
    try {
      this.files.append(lines);
    } catch (err) {
      this.stop(err as Error);
    }
    // A batch split by a rotation may be written in part before a write fails.
    const written = this.files.linesWritten - before;
    this.totals.written += written;
    this.requests.inc({ result: 'written' }, written);
    if (written < lines.length) this.requests.inc({ result: 'failed' }, lines.length - written);
  }

  private judge(h: HashedRequest): Result {
    if (this.stopped) return 'failed';
    if (h.draw >= this.sample) return 'sampled';
    if (h.skipped) return h.skipped;
    return 'written';
  }

  private noteCut(h: HashedRequest): void {
    const model = h.record.model;
    if (model in this.cut || Object.keys(this.cut).length >= MAX_MODELS_LISTED) return;
    this.cut[model] = { cut: h.blocks!.cut, tokenizer: h.tokenizer };
  }

  private traceFacts(): TraceFacts {
    const names = new Set(this.opts.upstreams.map((u) => u.name));
    for (const e of this.machine?.read().engines ?? []) {
      const c = e.cacheConfig;
      if (c && names.has(e.upstream)) this.engines[e.upstream] = { engine: e.engine, block_size: c.blockSize, cache_tokens: c.tokens, prefix_caching: c.prefixCaching };
    }
    return {
      format: 'infermeter-workload-trace', format_version: 1, infermeter_version: PACKAGE_VERSION,
      start_unix_ms: this.startUnixMs, start_time: new Date(this.startUnixMs).toISOString(),
      block_size: this.blockTokens, chars_per_token: this.opts.promptCharsPerToken, hash: 'sha256-53-salted', cut: this.cut, sample: this.sample,
      engines: this.engines,
    };
  }

  private refresh(): void {
    try {
      this.files.refresh();
    } catch (err) {
      this.log.warn({ err: (err as Error).message, file: this.opts.workloadTrace }, 'workload trace sidecar not refreshed');
    }
  }

  /** The one line said when the trace stops: the proxy goes on, the trace does not. */
  private stop(err: Error): void {
    if (this.stopped) return;
    this.stopped = true;
    this.writing.set(0);
    this.log.error({ err: err.message, code: (err as NodeJS.ErrnoException).code }, `workload trace stopped: cannot write --workload-trace ${this.opts.workloadTrace}; requests are still proxied and metered`);
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.files.close();
    await (await this.logsReady)?.shutdown();
  }
}
