/**
 * The metrics side: owns the registry, records request batches, runs the collectors and
 * serves /metrics. It runs in a worker thread so that rendering /metrics (tens of ms for a
 * large registry) and collector work never stall a stream on the proxy's event loop.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { CollectorRunner } from '../collectors/runner.js';
import { COLLECTORS } from '../collectors/index.js';
import { ModelLabels } from './models.js';
import { RequestMetrics, nativeOptionsFrom } from './prometheus.js';
import { startOtlp, type OtlpHook } from './otlp-start.js';
import { UNMEASURED, type RecordBatch, type RequestRecord, type WireBatch } from './record.js';
import { decodeRecords } from './record-codec.js';
import { InFlightHistory } from './in-flight-history.js';
import { ROUTE_LABELS, routeByLabel, routeLabelIndex } from '../proxy/routes.js';
import { ProxyLoopMetrics } from '../collectors/host/proxy-loop.js';
import { chooseExposition } from './negotiate.js';
import { encodeRegistry, PROTOBUF_CONTENT_TYPE } from './exposition-proto.js';

export class MetricsSide {
  readonly registry = new Registry();
  readonly models: ModelLabels;
  /** The proxy thread's event-loop delay and heap, measured there and sent here. */
  readonly proxyLoop: ProxyLoopMetrics;
  private readonly requests: RequestMetrics;
  /** null unless the OTEL_* environment asks for OTLP (decided once, here). */
  readonly otlp: OtlpHook | null;
  private readonly collectors: CollectorRunner;
  private server: Server | null = null;

  constructor(
    private readonly config: Config,
    private readonly log: Logger,
  ) {
    this.models = new ModelLabels({ allowlist: config.models, upstream: config.upstream, refreshSeconds: config.modelsRefresh, log });
    this.requests = new RequestMetrics(this.registry, config.buckets, config.engine, config.slos, (m) => this.models.label(m), nativeOptionsFrom(config), config);
    this.collectors = new CollectorRunner(this.registry, config, log);
    this.proxyLoop = new ProxyLoopMetrics(this.registry);
    this.otlp = startOtlp(config, log, (m) => this.models.label(m));
  }

  /** Per proxy loop (source): its requests in flight, and starts and finishes per route. */
  private readonly sources = new Map<number, { inFlight: number; started: number[]; finished: number[]; history: InFlightHistory }>();

  /** Records that came before the upstream's first model list (labelled once it is in). */
  private early: RequestRecord[][] | null = [];

  ingest(batch: RecordBatch): void {
    if (this.early) {
      // Only the records wait for their labels; the in-flight gauge moves at once.
      if (batch.records.length > 0) this.early.push(batch.records);
      batch = { records: [], inFlight: batch.inFlight };
    }
    this.requests.ingest(batch);
    this.otlp?.ingest(batch);
  }

  private flushEarly(): void {
    const early = this.early ?? [];
    this.early = null;
    for (const records of early) this.ingest({ records, inFlight: this.inFlightTotal() });
  }

  /** One proxy loop's batch: every source's in-flight count adds up to the machine's. */
  ingestWire(batch: WireBatch): void {
    let src = this.sources.get(batch.source);
    if (!src) this.sources.set(batch.source, (src = { inFlight: 0, started: [], finished: new Array<number>(ROUTE_LABELS.length).fill(0), history: new InFlightHistory() }));
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
    for (const r of records) src.finished[routeLabelIndex(r.route)]!++;
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

  private inFlightTotal(): number {
    let n = 0;
    for (const s of this.sources.values()) n += s.inFlight;
    return n;
  }

  /** Starts collectors and the /metrics listener; resolves to the bound port. */
  async start(): Promise<number> {
    void this.models.start().then(() => this.flushEarly());
    this.collectors.start(COLLECTORS);
    this.server = createServer((req, res) => void this.serve(req.url ?? '/', req.method ?? 'GET', res));
    this.server.keepAliveTimeout = 65_000;
    const { host, port } = this.config.metricsListen;
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(port, host, () => resolve());
    });
    return (this.server.address() as AddressInfo).port;
  }

  private async serve(url: string, method: string, res: import('node:http').ServerResponse): Promise<void> {
    const path = url.split('?')[0];
    if (method !== 'GET' && method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    if (path === '/metrics') {
      try {
        // Native histograms travel only in the protobuf exposition (see negotiate.ts).
        const proto = chooseExposition(res.req.headers.accept) === 'protobuf';
        const body = proto ? await encodeRegistry(this.registry) : await this.registry.metrics();
        const type = proto ? PROTOBUF_CONTENT_TYPE : this.registry.contentType;
        res.writeHead(200, { 'content-type': type, vary: 'Accept' }).end(method === 'HEAD' ? undefined : body);
      } catch (err) {
        this.log.error({ err: (err as Error).message }, 'rendering /metrics failed');
        res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics rendering failed\n');
      }
      return;
    }
    if (path === '/healthz' || path === '/readyz') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' }).end('infermeter metrics listener: see /metrics\n');
  }

  async close(): Promise<void> {
    // Records still waiting for the first model list are recorded now, as `other` if need be.
    this.flushEarly();
    this.models.stop();
    await this.collectors.close();
    await this.otlp?.shutdown();
    if (this.server) {
      const s = this.server;
      await new Promise<void>((resolve) => s.close(() => resolve()));
      s.closeAllConnections();
    }
  }
}
