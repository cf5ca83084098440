/**
 * buildApp(config) → a Fastify instance that never listens by itself (main.ts listens;
 * tests listen on port 0). The proxy port serves proxied traffic only: /metrics and
 * health live on the metrics listener.
 */
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { Pool } from 'undici';
import type { Logger } from 'pino';
import type { Config } from './config.js';
import type { RecordSink } from './metrics/sink.js';
import { Exchange, type ProxyContext } from './proxy/exchange.js';
import { routeFor } from './proxy/routes.js';

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'];

export interface App {
  fastify: FastifyInstance;
  pool: Pool;
  /** Resolves once every in-flight exchange has ended. */
  close(): Promise<void>;
}

export function buildApp(config: Config, sink: RecordSink, log: Logger): App {
  const upstream = new URL(config.upstream);
  const pool = new Pool(upstream.origin, {
    connections: config.upstreamConnections,
    connectTimeout: config.connectTimeout * 1000,
    headersTimeout: config.headersTimeout * 1000,
    bodyTimeout: config.idleTimeout * 1000,
    keepAliveTimeout: 4_000,
  });
  const ctx: ProxyContext = {
    pool,
    basePath: upstream.pathname === '/' ? '' : upstream.pathname,
    injectUsage: config.injectUsage,
    bodyLimit: config.bodyLimit,
    sink,
    log,
  };

  const fastify = Fastify({
    loggerInstance: log as unknown as FastifyBaseLogger,
    // Never log requests: their headers carry Authorization and their bodies carry prompts.
    logController: new LogController({ disableRequestLogging: true }),
    // Generation can take minutes: no server-side request timeout beyond the upstream's.
    requestTimeout: 0,
    connectionTimeout: 0,
    keepAliveTimeout: 65_000,
    forceCloseConnections: 'idle',
    return503OnClosing: true,
    bodyLimit: config.bodyLimit,
    // Paths are forwarded verbatim; never rewrite what the client asked for.
    routerOptions: { ignoreTrailingSlash: false, ignoreDuplicateSlashes: false, maxParamLength: 8192 },
  });
  // Bodies are not parsed by Fastify: the exchange streams or reads them itself.
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser('*', (_req, _payload, done) => done(null, undefined));

  fastify.route({
    method: METHODS,
    url: '*',
    handler: (request, reply) => {
      const t0 = performance.now();
      reply.hijack();
      const path = originFormTarget(request.raw.url ?? '/');
      const exchange = new Exchange(ctx, request.raw, reply.raw, routeFor(path.split('?', 1)[0]!), path, t0);
      exchange.run().catch((err: unknown) => {
        log.error({ err: (err as Error).message }, 'proxy exchange failed');
        if (!reply.raw.headersSent) reply.raw.writeHead(500).end();
        else reply.raw.destroy();
      });
    },
  });

  return {
    fastify,
    pool,
    async close() {
      await fastify.close();
      await pool.close();
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
