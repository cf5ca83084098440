/**
 * The metrics side: the composition root of everything that runs in the metrics thread. It
 * takes each proxy loop's batches (sources.ts), labels and judges their records once
 * (metrics/batch.ts) and hands the judged batch to every consumer of the table (consumers.ts);
 * it runs the collectors, polls the upstreams' model lists for itself and for the proxy loops'
 * routing (metrics/models.ts), applies the
 * reloads it is handed (reload.ts) and serves the metrics listener (listener.ts). It runs in a
 * worker thread so that rendering /metrics (tens of ms for a large registry) and collector
 * work never stall a stream on the proxy's event loop. It reads SideOptions, never Config
 * (docs/architecture.md).
 */
import { Agent, type Dispatcher } from 'undici';
import { Registry } from 'prom-client';
import type { Logger } from 'pino';
import { upstreamConnectOptions } from '../lib/tls.js';
import type { WireBatch } from '../record/record.js';
import type { ModelLists } from '../record/model-lists.js';
import { CollectorRunner } from '../collectors/runner.js';
import { COLLECTORS } from '../collectors/index.js';
import { ProxyLoopMetrics } from '../collectors/host/proxy-loop.js';
import { judgeBatch, type JudgedBatch } from '../metrics/batch.js';
import type { BatchConsumer } from '../metrics/consumer.js';
import { liveOf, type LiveSettings } from '../metrics/live.js';
import { ModelLabels } from '../metrics/models.js';
import { ReloadMetrics } from '../metrics/reload-metrics.js';
import { metricsRoutes } from '../exporters/prometheus/routes.js';
import { CONSUMERS } from './consumers.js';
import { ProxyHealth, UPSTREAM_PROBE_MS, healthRoutes, type ProxyState } from './health.js';
import { MetricsListener } from './listener.js';
import type { SideOptions } from './options.js';
import { applyReload, reloadRoutes, type ReloadPlan, type ReloadResult } from './reload.js';
import { Sources } from './sources.js';
import { StartupBuffer, type Decoded } from './startup-buffer.js';
import { WebGuard, loadWebConfig } from './web-config.js';

export type { SideOptions } from './options.js';
export type { ReloadPlan, ReloadResult } from './reload.js';

export class MetricsSide {
  readonly registry = new Registry();
  readonly models: ModelLabels;
  /** The proxy thread's event-loop delay and heap, measured there and sent here. */
  readonly proxyLoop: ProxyLoopMetrics;
  readonly health: ProxyHealth;
  /** Every consumer the table turned on, in its order. */
  readonly consumers: readonly BatchConsumer[];
  private readonly collectors: CollectorRunner;
  private readonly sources: Sources;
  private readonly early = new StartupBuffer();
  private readonly reloads: ReloadMetrics;
  /** Connections to the upstream made from here (model list, readiness probe) carry its TLS settings. */
  private readonly upstreamAgent: Dispatcher | undefined;
  private probeTimer: NodeJS.Timeout | null = null;
  /** --web.config.file: basic auth and TLS of every endpoint but the probes. */
  private readonly guard: WebGuard;
  private readonly listener: MetricsListener;
  /** The live settings in force (the judge reads their SLOs). */
  private live: LiveSettings;
  /**
   * Hands a POST /-/reload to the process that resolves reloads (daemon/reload.ts) and resolves
   * with what the reload did; set by the thread's entry point.
   */
  askReload: (trigger: string) => Promise<ReloadResult> = () => Promise.resolve({ ok: false, error: 'reload is not wired to this metrics side' });
  /** Several upstreams: each one's model list, for the proxy loops' routing (set by the thread's entry point). */
  onModelLists: ((lists: ModelLists) => void) | null = null;

  constructor(
    private readonly options: SideOptions,
    private readonly log: Logger,
  ) {
    this.live = liveOf(options);
    this.health = new ProxyHealth({ livenessTimeoutMs: options.livenessTimeout * 1000, requiresUpstream: options.readyRequiresUpstream });
    // The first upstream's own TLS files (an `upstreams:` entry may have its own; with one --upstream they are the global flags').
    const first = options.upstreams[0];
    const connect = upstreamConnectOptions(first ? { ...first, upstream: first.url } : options);
    this.upstreamAgent = connect ? new Agent({ connect }) : undefined;
    this.models = new ModelLabels({
      allowlist: options.models, upstream: options.upstream, refreshSeconds: options.modelsRefresh, log,
      dispatcher: this.upstreamAgent, answered: () => this.health.upstreamAnswered(), engine: options.engine, name: options.upstreams[0]?.name,
      others: options.upstreams.slice(1).map((u) => {
        const c = upstreamConnectOptions({ ...u, upstream: u.url });
        return { url: u.url, name: u.name, dispatcher: c ? new Agent({ connect: c }) : undefined };
      }),
      onLists: (lists) => this.onModelLists?.(lists),
    });
    this.collectors = new CollectorRunner(this.registry, options, log);
    this.proxyLoop = new ProxyLoopMetrics(this.registry, this.collectors.machine);
    this.reloads = new ReloadMetrics(this.registry);
    this.sources = new Sources(this.health, log);
    this.consumers = this.makeConsumers();
    this.guard = new WebGuard(options.webConfigFile ? loadWebConfig(options.webConfigFile) : null);
    this.listener = new MetricsListener(this.guard.listenerTls(options, log), this.guard, [
      metricsRoutes(this.registry, log),
      healthRoutes(this.health),
      reloadRoutes(options.webEnableLifecycle, (trigger) => this.askReload(trigger)),
      ...this.consumers.flatMap((c) => (c.routes ? [c.routes] : [])),
    ]);
  }

  private makeConsumers(): BatchConsumer[] {
    const made: BatchConsumer[] = [];
    const ctx = {
      registry: this.registry, machine: this.collectors.machine, options: this.options, log: this.log, models: this.models,
      earlier: <T extends BatchConsumer>(kind: abstract new (...args: never[]) => T) => made.find((c): c is T => c instanceof kind),
    };
    for (const entry of CONSUMERS) {
      if (!entry.enabled(this.options)) continue;
      const consumer = entry.create(ctx);
      if (consumer) made.push(consumer);
    }
    return made;
  }

  /** A consumer by its class (tests, and the thread's entry point). */
  consumer<T extends BatchConsumer>(kind: abstract new (...args: never[]) => T): T | undefined {
    return this.consumers.find((c): c is T => c instanceof kind);
  }

  /** A proxy loop's listener state (listening, draining), sent by main.ts or the cluster primary. */
  proxyState(source: number, state: ProxyState): void {
    this.health.state(source, state);
    if (state === 'draining') this.log.info('draining: /readyz answers 503 from now on');
  }

  /** One proxy loop's batch. */
  ingestWire(batch: WireBatch): void {
    this.ingest(this.sources.wire(batch));
  }

  /** A proxy worker died: what it had in flight is counted now, once, as `worker_lost`. */
  sourceExited(source: number): void {
    this.proxyLoop.remove(source);
    this.health.exited(source);
    const lost = this.sources.exited(source);
    this.ingest({ records: lost, inputs: null });
  }

  /** Labels and judges the records once, and hands them (with their inputs, if any) to every consumer. */
  private ingest(decoded: Decoded): void {
    const inFlight = this.sources.inFlight();
    let batch: JudgedBatch;
    if (this.early.waiting) {
      this.early.hold(decoded);
      batch = { records: [], labels: [], verdicts: [], inFlight };
    } else {
      const label = (m: string) => this.models.label(m);
      batch = { ...judgeBatch(decoded.records, inFlight, this.live.slos, label, this.sources.inFlightByModel(label), decoded.inputs), silentByModel: this.sources.silentByModel(label), inFlightByUpstream: this.sources.inFlightByUpstream() };
    }
    for (const c of this.consumers) c.ingest(batch);
  }

  /** Applies a reload daemon/reload.ts resolved (SIGHUP, or a POST /-/reload it was asked for). */
  applyReload(plan: ReloadPlan, trigger: string): ReloadResult {
    return applyReload(plan, trigger, {
      consumers: this.consumers,
      models: this.models,
      reloadWeb: (web, restartNeeded) => this.guard.reload(web, this.listener.server, this.options, this.log, restartNeeded),
      setLive: (live) => (this.live = live),
      gauges: this.reloads,
      log: this.log,
      configFile: this.options.configFile,
    });
  }

  /** Starts the model list, the collectors, the consumers and the listener; resolves to the bound port. */
  async start(): Promise<number> {
    void this.models.start().then(() => this.early.release((decoded) => this.ingest(decoded)));
    this.collectors.start(COLLECTORS);
    for (const c of this.consumers) c.start?.();
    if (this.options.readyRequiresUpstream) {
      // The model-list read doubles as the probe (it runs even with an allowlist, which it then leaves alone).
      if (this.models.fixed) void this.models.refresh(); // with no allowlist, start() has just asked
      this.probeTimer = setInterval(() => void this.models.refresh(), UPSTREAM_PROBE_MS);
      this.probeTimer.unref();
    }
    return this.listener.listen(this.options.metricsListen);
  }

  async close(): Promise<void> {
    if (this.probeTimer) clearInterval(this.probeTimer);
    // Records still waiting for the first model list are recorded now, as `other` if need be.
    this.early.release((decoded) => this.ingest(decoded));
    this.models.stop();
    for (const c of this.consumers) await c.close?.();
    await this.collectors.close();
    await this.upstreamAgent?.close();
    await this.listener.close();
  }
}
