/**
 * The metrics side: owns the registry, records request batches, runs the collectors and
 * serves /metrics. It runs in a worker thread so that rendering /metrics (tens of ms for a
 * large registry) and collector work never stall a stream on the proxy's event loop.
 * Between the sources and the exporters (docs/architecture.md): it reads SideOptions, never Config.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { Agent, type Dispatcher } from 'undici';
import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import type { Logger } from 'pino';
import type { CollectorOptions } from '../collectors/types.js';
import type { SloConfig } from '../slo/config.js';
import type { HostPort } from '../lib/parse.js';
import type { LogLevel } from '../lib/log.js';
import type { TlsFiles } from '../lib/tls.js';
import type { OtlpConfigOptions } from '../exporters/otlp/otlp.js';
import type { TrailOptions } from '../exporters/trace/trail.js';
import { CollectorRunner } from '../collectors/runner.js';
import { COLLECTORS } from '../collectors/index.js';
import { ModelLabels } from '../metrics/models.js';
import { RequestMetrics, exemplarPolicyFrom, nativeOptionsFrom, type ExemplarOptions, type NativeHistogramOptions, type RequestMetricsSettings } from '../metrics/prometheus.js';
import { startOtlp, type OtlpHook } from '../exporters/otlp/start.js';
import { UNMEASURED, type RequestRecord, type WireBatch } from '../record/record.js';
import { type RecordBatch } from '../metrics/batch.js';
import { decodeRecords } from '../record/codec.js';
import { InFlightHistory } from '../metrics/in-flight-history.js';
import { ROUTE_LABELS, routeByLabel, routeLabelIndex } from '../record/routes.js';
import { ProxyLoopMetrics } from '../collectors/host/proxy-loop.js';
import { chooseExposition } from '../exporters/prometheus/negotiate.js';
import { encodeRegistry, PROTOBUF_CONTENT_TYPE } from '../exporters/prometheus/proto.js';
import { ProxyHealth, UPSTREAM_PROBE_MS, type HealthAnswer, type ProxyState } from './health.js';
import { ReloadMetrics } from '../metrics/reload-metrics.js';
import { upstreamConnectOptions } from '../lib/tls.js';
import { WebGuard, loadWebConfig, type WebConfig } from './web-config.js';
import { setLogLevel } from '../lib/log.js';

import { OPENMETRICS_CONTENT_TYPE, renderOpenMetrics } from '../exporters/prometheus/openmetrics.js';
import { RequestTrail } from '../exporters/trace/trail.js';
import { serveDebugRequests } from '../exporters/trace/debug-route.js';
import { judge } from '../slo/judge.js';
import { StatusPage } from '../exporters/ui/status-page.js';
import { slowLogProvider } from '../exporters/ui/slow-requests.js';
import { BottleneckMonitor, type BottleneckSettings } from '../metrics/bottleneck/live.js';

/**
 * What the metrics side reads of the configuration: its own settings and those of every
 * collector and exporter it runs (config.ts's Config carries them all; docs/architecture.md).
 */
export interface SideOptions extends CollectorOptions, TlsFiles, OtlpConfigOptions, TrailOptions, ExemplarOptions, NativeHistogramOptions, RequestMetricsSettings, BottleneckSettings {
  metricsListen: HostPort;
  models: string[];
  modelsRefresh: number;
  livenessTimeout: number;
  readyRequiresUpstream: boolean;
  webEnableLifecycle: boolean;
  ui: boolean;
  configFile: string | null;
}

/**
 * The settings a reload applies: SLO thresholds (the exact good/bad counters, prompt classes
 * included), the model label set, the log level, the tenant limit. Tenant sources, prompt
 * classes and in-flight bands decide label names and bucket layouts: restart only.
 */
export interface LiveSettings {
  slos: SloConfig;
  models: string[];
  modelsRefresh: number;
  logLevel: LogLevel;
  tenantLimit: number;
}

/** A reload's resolution (daemon/reload.ts): what to apply, or why the running config stays. */
export type ReloadOutcome =
  | { ok: true; live: LiveSettings; restartNeeded: string[]; bucketsKept: string[] }
  | { ok: false; error: string };

/** What a reload did, for the POST /-/reload answer and for the parent (log level, workers). */
export type ReloadResult = { ok: true; live: LiveSettings; restartNeeded: string[] } | { ok: false; error: string };

export class MetricsSide {
  readonly registry = new Registry();
  readonly models: ModelLabels;
  /** The proxy thread's event-loop delay and heap, measured there and sent here. */
  readonly proxyLoop: ProxyLoopMetrics;
  private readonly requests: RequestMetrics;
  /** null unless the OTEL_* environment asks for OTLP (decided once, here). */
  readonly otlp: OtlpHook | null;
  private readonly collectors: CollectorRunner;
  /** Slow-request log, SLO-breach log lines and spans (trace/). */
  readonly trail: RequestTrail;
  private server: Server | null = null;
  readonly health: ProxyHealth;
  private readonly reloads: ReloadMetrics;
  /** Connections to the upstream made from here (model list, readiness probe) carry its TLS settings. */
  private readonly upstreamAgent: Dispatcher | undefined;
  private probeTimer: NodeJS.Timeout | null = null;
  /** The live status page (src/exporters/ui/), null under --ui=false. */
  readonly statusPage: StatusPage | null;
  /** --web.config.file: basic auth and TLS of every endpoint but the probes. */
  private readonly guard: WebGuard;
  /** What limits each model (src/metrics/bottleneck/): the gauge, the status JSON and the page read it. */
  readonly bottleneck: BottleneckMonitor;

  constructor(
    private config: SideOptions,
    private readonly log: Logger,
    /** Resolves the configuration again (the same flags and environment, the file re-read). */
    private readonly reresolve: () => ReloadOutcome,
  ) {
    this.health = new ProxyHealth({ livenessTimeoutMs: config.livenessTimeout * 1000, requiresUpstream: config.readyRequiresUpstream });
    // The first upstream's own TLS files (an `upstreams:` entry may have its own; with one --upstream they are the global flags').
    const first = config.upstreams[0];
    const connect = upstreamConnectOptions(first ? { ...first, upstream: first.url } : config);
    this.upstreamAgent = connect ? new Agent({ connect }) : undefined;
    this.models = new ModelLabels({
      allowlist: config.models, upstream: config.upstream, refreshSeconds: config.modelsRefresh, log,
      dispatcher: this.upstreamAgent, answered: () => this.health.upstreamAnswered(), engine: config.engine, name: config.upstreams[0]?.name,
      others: config.upstreams.slice(1).map((u) => {
        const c = upstreamConnectOptions({ ...u, upstream: u.url });
        return { url: u.url, name: u.name, dispatcher: c ? new Agent({ connect: c }) : undefined };
      }),
    });
    this.requests = new RequestMetrics(this.registry, config.buckets, config.engine, config.slos, (m) => this.models.label(m), nativeOptionsFrom(config), exemplarPolicyFrom(config), config);
    this.collectors = new CollectorRunner(this.registry, config, log);
    this.proxyLoop = new ProxyLoopMetrics(this.registry);
    this.otlp = startOtlp(config, log, (m) => this.models.label(m));
    this.reloads = new ReloadMetrics(this.registry);
    this.trail = new RequestTrail(config, log, (m) => this.models.label(m));
    this.statusPage = config.ui ? new StatusPage({ registry: this.registry, slos: config.slos, log, labelOf: (m) => this.models.label(m) }) : null;
    if (this.statusPage) this.statusPage.slowRequests = slowLogProvider(this.trail.slowLog);
    this.guard = new WebGuard(config.webConfigFile ? loadWebConfig(config.webConfigFile) : null);
    this.bottleneck = new BottleneckMonitor({
      registry: this.registry, slos: config.slos, engine: config.engine, intervalSeconds: config.bottleneckInterval, windowSeconds: config.bottleneckWindow, benchLimit: config.bottleneckBenchLimit,
      labelOf: (m) => this.models.label(m), log, upstreamsOf: config.upstreams.length > 1 ? (l) => this.models.upstreamsOf(l) : undefined,
    });
    if (this.statusPage) this.statusPage.bottlenecks = this.bottleneck;
  }

  /** A proxy loop's listener state (listening, draining), sent by main.ts or the cluster primary. */
  proxyState(source: number, state: ProxyState): void {
    this.health.state(source, state);
    if (state === 'draining') this.log.info('draining: /readyz answers 503 from now on');
  }

  /** Re-reads the config file (same schema, same flags and environment); a bad file changes nothing. */
  reload(trigger: string): ReloadResult {
    let r = this.reresolve();
    let web: WebConfig | null = null;
    if (r.ok && this.config.webConfigFile) {
      try {
        web = loadWebConfig(this.config.webConfigFile);
      } catch (err) {
        r = { ok: false, error: (err as Error).message };
      }
    }
    if (!r.ok) {
      this.reloads.failed();
      this.log.error({ trigger, err: r.error }, 'config reload failed; the running config stays');
      return r;
    }
    if (r.restartNeeded.length > 0) {
      this.log.warn({ settings: r.restartNeeded }, 'config reload: these settings differ in the new config but change only on restart; they keep their running values');
    }
    if (r.bucketsKept.length > 0) {
      this.log.info({ buckets: r.bucketsKept }, 'config reload: histogram bucket boundaries stay as they are until restart (existing series keep their le set); the SLO counters use the new thresholds now');
    }
    if (this.config.webConfigFile) this.guard.reload(web, this.server, this.config, this.log, r.restartNeeded);
    this.requests.setSlos(r.live.slos);
    this.otlp?.setSlos(r.live.slos);
    this.trail.setSlos(r.live.slos);
    if (this.statusPage) this.statusPage.state.slos = r.live.slos;
    this.bottleneck.slos = r.live.slos;
    this.models.reconfigure(r.live.models, r.live.modelsRefresh);
    this.requests.tenants.setLimit(r.live.tenantLimit);
    setLogLevel(this.log, r.live.logLevel);
    this.config = { ...this.config, ...r.live };
    this.reloads.succeeded();
    this.log.info({ trigger, file: this.config.configFile }, 'config reloaded');
    return { ok: true, live: r.live, restartNeeded: r.restartNeeded };
  }

  /**
   * Per proxy loop (source): its requests in flight, starts and finishes per route, its
   * generation requests in flight over time, and those in flight per raw model name (bounded
   * by the requests in flight: a model leaves the map when its last request ends).
   */
  private readonly sources = new Map<number, { inFlight: number; started: number[]; finished: number[]; history: InFlightHistory; models: Map<string, number> }>();

  /** Records that came before the upstream's first model list (labelled once it is in). */
  private early: RequestRecord[][] | null = [];

  ingest(batch: RecordBatch): void {
    if (this.early) {
      // Only the records wait for their labels; the in-flight gauge moves at once.
      if (batch.records.length > 0) this.early.push(batch.records);
      batch = { records: [], inFlight: batch.inFlight };
    } else {
      // Judged once here for every exporter below, with the labels they use.
      const verdicts = batch.verdicts ?? batch.records.map((r) => judge(this.config.slos, this.models.label(r.model), r));
      const inFlightByModel = batch.inFlightByModel ?? (this.statusPage ? this.inFlightByModel() : undefined);
      batch = { ...batch, verdicts, inFlightByModel };
    }
    this.requests.ingest(batch);
    this.otlp?.ingest(batch);
    this.trail.ingest(batch.records, batch.verdicts);
    this.statusPage?.ingest(batch);
    this.bottleneck.ingest(batch);
  }

  private flushEarly(): void {
    const early = this.early ?? [];
    this.early = null;
    for (const records of early) this.ingest({ records, inFlight: this.inFlightTotal() });
  }

  /** One proxy loop's batch: every source's in-flight count adds up to the machine's. */
  ingestWire(batch: WireBatch): void {
    let src = this.sources.get(batch.source);
    if (!src) this.sources.set(batch.source, (src = { inFlight: 0, started: [], finished: new Array<number>(ROUTE_LABELS.length).fill(0), history: new InFlightHistory(), models: new Map() }));
    this.health.beat(batch.source);
    src.inFlight = batch.inFlight;
    src.history.note(Date.now(), batch.generationInFlight ?? 0);
    src.started = batch.startedByRoute;
    let records: RequestRecord[] = [];
    if (batch.records) {
      try {
        records = decodeRecords(batch.records);
      } catch (err) {
        this.log.error({ err: (err as Error).message, source: batch.source }, 'dropped an unreadable record batch');
      }
    }
    // A batch's starts come before its finishes: a request is admitted in the batch it finishes in, or earlier.
    for (const [model, n] of batch.startedByModel ?? []) src.models.set(model, (src.models.get(model) ?? 0) + n);
    for (const r of records) {
      src.finished[routeLabelIndex(r.route)]!++;
      if (r.outcome === 'ok' || r.outcome === 'stream_error') this.health.upstreamAnswered();
      if (r.modelAdmitted) {
        const left = (src.models.get(r.model) ?? 0) - 1;
        if (left > 0) src.models.set(r.model, left);
        else src.models.delete(r.model);
      }
    }
    if (this.sources.size > 1) this.addOtherLoops(src, records);
    this.ingest({ records, inFlight: this.inFlightTotal() });
  }

  /**
   * The machine's count at a record's first token: its own loop's then, plus every other loop's
   * as that loop had last reported it by then (a loop reports within 20 ms of a change, so that
   * part is up to one batch interval and the IPC hop stale). Records without a TTFT (failed
   * streams) take the other loops' latest counts.
   */
  private addOtherLoops(own: { history: InFlightHistory }, records: RequestRecord[]): void {
    for (const r of records) {
      // At its start, likewise (the slow-request log's figure); generation routes only, as the history.
      if (routeByLabel(r.route).metered) for (const s of this.sources.values()) if (s !== own) r.inFlightAtStart += s.history.at(r.startedAt);
      if (r.inFlightAtFirstToken < 0) continue;
      const at = r.ttft >= 0 ? r.startedAt + r.ttft * 1000 : -1;
      for (const s of this.sources.values()) if (s !== own) r.inFlightAtFirstToken += at < 0 ? s.history.latest : s.history.at(at);
    }
  }

  /**
   * A proxy worker died. Each request it had reported starting and not finishing is counted
   * now, once, as `worker_lost` (its model is unknown here: the label is `other`).
   */
  sourceExited(source: number): void {
    const src = this.sources.get(source);
    this.sources.delete(source);
    this.proxyLoop.remove(source);
    this.health.exited(source);
    if (!src) return;
    const lost: RequestRecord[] = [];
    src.started.forEach((n, i) => {
      const info = routeByLabel(ROUTE_LABELS[i]!);
      for (let k = src.finished[i]!; k < n; k++) {
        lost.push({ ...UNMEASURED, route: info.route, operation: info.operation, model: '', outcome: 'worker_lost', status: 0, streamed: false, errorType: 'worker_lost', startedAt: Date.now() });
      }
    });
    if (lost.length > 0) this.log.warn({ source, requests: lost.length }, 'counted the requests a dead proxy worker had in flight as worker_lost');
    this.ingest({ records: lost, inFlight: this.inFlightTotal() });
  }

  /** Generation requests in flight per model label, over every loop (labels as they are now). */
  private inFlightByModel(): Map<string, number> {
    const out = new Map<string, number>();
    for (const s of this.sources.values()) {
      for (const [model, n] of s.models) {
        const label = this.models.label(model);
        out.set(label, (out.get(label) ?? 0) + n);
      }
    }
    return out;
  }

  private inFlightTotal(): number {
    let n = 0;
    for (const s of this.sources.values()) n += s.inFlight;
    return n;
  }

  /** Starts collectors and the /metrics listener; resolves to the bound port. */
  async start(): Promise<number> {
    void this.models.start().then(() => this.flushEarly());
    this.collectors.start(COLLECTORS);
    this.statusPage?.start();
    this.bottleneck.start();
    if (this.config.readyRequiresUpstream) {
      // The model-list read doubles as the probe (it runs even with an allowlist, which it then leaves alone).
      if (this.models.fixed) void this.models.refresh(); // with no allowlist, start() has just asked
      this.probeTimer = setInterval(() => void this.models.refresh(), UPSTREAM_PROBE_MS);
      this.probeTimer.unref();
    }
    const handler = this.guard.handler((req, res) => this.serve(req.url ?? '/', req.method ?? 'GET', res));
    const tls = this.guard.listenerTls(this.config, this.log);
    this.server = (tls ? createHttpsServer(tls, handler) : createServer(handler)) as Server;
    this.server.keepAliveTimeout = 65_000;
    const { host, port } = this.config.metricsListen;
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(port, host, () => resolve());
    });
    return (this.server.address() as AddressInfo).port;
  }

  private async serve(url: string, method: string, res: ServerResponse): Promise<void> {
    const path = url.split('?')[0];
    if (path === '/-/reload' && (method === 'POST' || method === 'PUT')) {
      this.serveReload(res);
      return;
    }
    if (method !== 'GET' && method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    if (this.statusPage?.handle(url, method, res)) return;
    if (path === '/metrics') {
      try {
        // Native histograms travel only in the protobuf exposition (see negotiate.ts).
        const format = chooseExposition(res.req.headers.accept);
        const body = format === 'protobuf' ? await encodeRegistry(this.registry) : format === 'openmetrics' ? await renderOpenMetrics(this.registry) : await this.registry.metrics();
        const type = format === 'protobuf' ? PROTOBUF_CONTENT_TYPE : format === 'openmetrics' ? OPENMETRICS_CONTENT_TYPE : this.registry.contentType;
        res.writeHead(200, { 'content-type': type, vary: 'Accept' }).end(method === 'HEAD' ? undefined : body);
      } catch (err) {
        this.log.error({ err: (err as Error).message }, 'rendering /metrics failed');
        res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics rendering failed\n');
      }
      return;
    }
    if (path === '/debug/requests') return serveDebugRequests(this.trail.slowLog, url, method, res);
    if (path === '/healthz' || path === '/readyz') {
      const a: HealthAnswer = path === '/healthz' ? this.health.liveness() : this.health.readiness();
      res.writeHead(a.ok ? 200 : 503, { 'content-type': 'text/plain', 'cache-control': 'no-store' }).end(method === 'HEAD' ? undefined : `${a.reason}\n`);
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' }).end('infermeter metrics listener: see /metrics\n');
  }

  /** POST /-/reload: as SIGHUP; the parent learns of it (log level, workers) through onReload. */
  private serveReload(res: ServerResponse): void {
    res.req.resume(); // a body, if any, means nothing here
    if (!this.config.webEnableLifecycle) {
      res.writeHead(403, { 'content-type': 'text/plain' }).end('POST /-/reload is off; start infermeter with --web.enable-lifecycle (or send SIGHUP)\n');
      return;
    }
    const r = this.reload('POST /-/reload');
    this.onReload?.(r);
    if (!r.ok) {
      res.writeHead(500, { 'content-type': 'text/plain' }).end(`config reload failed; the running config stays: ${r.error}\n`);
      return;
    }
    const note = r.restartNeeded.length > 0 ? ` (needs a restart to change: ${r.restartNeeded.join(', ')})` : '';
    res.writeHead(200, { 'content-type': 'text/plain' }).end(`config reloaded${note}\n`);
  }

  /** Set by the thread's entry point: a reload that came over HTTP also reaches the parent. */
  onReload: ((r: ReloadResult) => void) | null = null;

  async close(): Promise<void> {
    if (this.probeTimer) clearInterval(this.probeTimer);
    // Records still waiting for the first model list are recorded now, as `other` if need be.
    this.flushEarly();
    this.models.stop();
    this.statusPage?.close();
    this.bottleneck.close();
    await this.collectors.close();
    await this.otlp?.shutdown();
    await this.upstreamAgent?.close();
    await this.trail.close();
    if (this.server) {
      const s = this.server;
      await new Promise<void>((resolve) => s.close(() => resolve()));
      s.closeAllConnections();
    }
  }
}
