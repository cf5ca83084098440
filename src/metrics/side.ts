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
import { RequestMetrics } from './prometheus.js';
import { startOtlp, type OtlpHook } from './otlp-start.js';
import type { RecordBatch } from './record.js';
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
    this.requests = new RequestMetrics(this.registry, config.buckets, config.engine, config.slos, (m) => this.models.label(m));
    this.collectors = new CollectorRunner(this.registry, config, log);
    this.proxyLoop = new ProxyLoopMetrics(this.registry);
    this.otlp = startOtlp(config, log, (m) => this.models.label(m));
  }

  ingest(batch: RecordBatch): void {
    this.requests.ingest(batch);
    this.otlp?.ingest(batch);
  }

  /** Starts collectors and the /metrics listener; resolves to the bound port. */
  async start(): Promise<number> {
    this.models.start();
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
