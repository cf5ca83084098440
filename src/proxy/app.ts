/**
 * buildApp(config) → the proxy's HTTP server, not yet listening (main.ts listens; tests
 * listen on port 0). The proxy port serves proxied traffic only: /metrics and health
 * live on the metrics listener.
 *
 * The server is plain `node:http`: every request goes to one exchange. Fastify (the design
 * card's choice) was measured here routing every request into the exchange from its first hook:
 * within the runs' spread for CPU, but a client that aborted at once lost its record (the fault
 * test "clients abort at random points" counted 147–149 of 150), so the listener stays plain
 * `node:http` (docs/performance.md, "Fastify on the proxy listener").
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Logger } from 'pino';
import type { RecordSink } from '../record/sink.js';
import { InfermeterError } from '../lib/errors.js';
import { Exchange, type ProxyContext } from './exchange.js';
import { tenantReader, type TenantOptions } from './tenant.js';
import { inputReader, type InputOptions } from './input.js';
import { routeFor } from '../record/routes.js';
import { listenerTls, upstreamConnectOptions, type UpstreamTlsFiles } from '../lib/tls.js';
import { TracePropagator } from './trace-context.js';
import type { TraceSettings } from '../lib/trace-env.js';
import { UpstreamSet } from './upstreams.js';
import { overLimit } from './body-limit.js';
import type { UpstreamSpec } from '../lib/upstream-spec.js';

/** Methods forwarded; anything else (TRACE, CONNECT, WebDAV verbs) is refused with 405. */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']);
const ALLOW = [...METHODS].join(', ');

export interface App {
  server: Server;
  upstreams: UpstreamSet;
  /** Resolves once the upstreams' model lists were handed over once (at once with one upstream: nothing to route). */
  ready: Promise<void>;
  /** Stops taking requests (new ones on open connections get 503) and resolves once every in-flight exchange has ended. */
  close(): Promise<void>;
}

/** What the proxy reads of the configuration (config.ts's Config carries it; docs/architecture.md). */
export interface ProxyOptions extends UpstreamTlsFiles, TenantOptions, InputOptions {
  /** Every upstream; the list of one for a single --upstream (their model lists come from the metrics side: upstreams.ts). */
  upstreams: UpstreamSpec[];
  upstreamConnections: number;
  /** Seconds, as every timeout in the config. */
  connectTimeout: number;
  headersTimeout: number;
  idleTimeout: number;
  /** --stall-after: what a silent stream is (record/sink.ts). */
  stallAfter: number;
  injectUsage: boolean;
  bodyLimit: number;
  tracing: TraceSettings | null;
  tlsCert: string;
  tlsKey: string;
}

export function buildApp(config: ProxyOptions, sink: RecordSink, log: Logger): App {
  const upstreams = new UpstreamSet({
    specs: config.upstreams,
    connect: (spec) => upstreamConnectOptions({ ...spec, upstream: spec.url }),
    log,
  });
  const ready = upstreams.start();
  sink.stallAfterMs = config.stallAfter * 1000;
  sink.upstreamsInFlight = () => upstreams.all.map((u) => u.inFlight);
  const ctx: ProxyContext = {
    upstreams,
    injectUsage: config.injectUsage,
    bodyLimit: config.bodyLimit,
    sink,
    log,
    trace: config.tracing ? new TracePropagator(config.tracing) : null,
    tenant: tenantReader(config),
    input: inputReader(config),
  };
  let closing = false;
  let inFlight = 0;
  let drained: (() => void) | null = null;
  const onEnd = () => {
    if (--inFlight === 0 && drained) drained();
  };

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const t0 = performance.now();
    if (closing) {
      res.writeHead(503, { 'content-type': 'application/json', connection: 'close' }).end(new InfermeterError('SHUTTING_DOWN').body());
      return;
    }
    if (!METHODS.has(req.method ?? '')) {
      res.writeHead(405, { allow: ALLOW, 'content-type': 'application/json' }).end(new InfermeterError('METHOD_NOT_ALLOWED').body());
      return;
    }
    inFlight++;
    res.once('close', onEnd);
    const path = originFormTarget(req.url ?? '/');
    const exchange = new Exchange(ctx, req, res, routeFor(path.split('?', 1)[0]!), path, t0);
    exchange.run().catch((err: unknown) => {
      log.error({ err: (err as Error).message, upstream: exchange.upstreamName }, 'proxy exchange failed');
      if (!res.headersSent) res.writeHead(500).end();
      else res.destroy();
    });
  };

  const options = {
    // Generation can take minutes: no server-side request timeout beyond the upstream's.
    requestTimeout: 0,
    keepAliveTimeout: 65_000,
    // Nagle would hold a small chunk back for the previous one's ACK.
    noDelay: true,
  };
  const tls = listenerTls(config.tlsCert, config.tlsKey);
  // An https.Server is an http.Server for everything here (close, closeIdleConnections, ...).
  const server = (tls ? createHttpsServer({ ...options, ...tls }) : createServer(options)) as Server;
  server.timeout = 0;
  // `Expect: 100-continue`: no `100 Continue` for a body already declared over the limit; the exchange answers 413 (body-limit.ts).
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    if (!overLimit(req, config.bodyLimit)) res.writeContinue();
    server.emit('request', req, res);
  });
  server.on('request', handle);

  return {
    server,
    upstreams,
    ready,
    async close() {
      closing = true;
      const exchanges = inFlight === 0 ? Promise.resolve() : new Promise<void>((resolve) => (drained = resolve));
      const listener = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      await exchanges;
      await listener;
      await upstreams.close();
    },
  };
}

/**
 * The path (and query) to forward. An absolute-form target (`GET http://other/x`) keeps
 * only its path: the client never chooses the upstream host.
 */
export function originFormTarget(url: string): string {
  if (url.startsWith('/')) return url.startsWith('//') ? '/' + url.replace(/^\/+/, '') : url;
  try {
    const u = new URL(url);
    return u.pathname + u.search;
  } catch {
    return '/' + url;
  }
}
