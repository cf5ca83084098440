/**
 * The metrics listener: Fastify over the node:http(s) server this file makes (so TLS comes
 * from the web config, and a reload can swap its certificates in place: web-config.ts). The
 * --web.config.file guard is an onRequest hook in front of every route but the kubelet probes;
 * each exporter registers its own routes as an encapsulated plugin. Everything else is
 * answered as the listener always has: 405 (with `allow`) for a method other than GET and HEAD,
 * 404 with a pointer to /metrics for an unknown path; a request body means nothing here.
 */
import { createServer, type Server } from 'node:http';
import { createServer as createHttpsServer, type ServerOptions as HttpsOptions } from 'node:https';
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import type { HostPort } from '../lib/parse.js';
import type { Routes } from '../metrics/consumer.js';
import { PROBE_PATHS } from './health.js';
import type { WebGuard } from './web-config.js';

/** Above any load balancer's idle timeout (60 s on most), so it never reuses a connection we closed. */
const KEEP_ALIVE_MS = 65_000;
/** Where a target no route may match is sent (the router would otherwise decode `%xx` and absolute forms). */
const UNROUTED = '/-/unrouted';

/** A route matches the path as sent, byte for byte: a percent-encoded or absolute-form target matches none. */
function exactTarget(url: string): string {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  return path.startsWith('/') && !path.includes('%') ? url : UNROUTED;
}

export class MetricsListener {
  private readonly app: FastifyInstance;
  readonly server: Server;

  constructor(tls: HttpsOptions | null, guard: WebGuard, routes: readonly Routes[]) {
    this.app = Fastify({
      // The server is ours: Fastify applies none of its own timeouts to it, and never binds more than the one address asked for.
      serverFactory: (handler) => {
        const server = (tls ? createHttpsServer(tls, handler) : createServer(handler)) as Server;
        server.keepAliveTimeout = KEEP_ALIVE_MS;
        return server;
      },
      rewriteUrl: (req) => exactTarget(req.url ?? '/'),
      return503OnClosing: false,
    });
    this.server = this.app.server as Server;
    const app = this.app;
    // No route reads a body (POST /-/reload ignores it): whatever comes is drained, never parsed or refused.
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', (_req, payload, done) => {
      payload.resume();
      done(null, undefined);
    });
    app.addHook('onRequest', async (req, reply) => {
      const q = req.url.indexOf('?');
      if (PROBE_PATHS.includes(q < 0 ? req.url : req.url.slice(0, q))) return;
      const denied = await guard.deny(req.raw);
      if (!denied) return;
      req.raw.resume();
      return reply.code(denied.status).headers(denied.headers).send(denied.body);
    });
    for (const r of routes) void app.register(async (scope) => r(scope));
    app.setNotFoundHandler((req, reply) => {
      if (req.method !== 'GET' && req.method !== 'HEAD') return reply.code(405).header('allow', 'GET, HEAD').send();
      return reply.code(404).header('content-type', 'text/plain').send('infermeter metrics listener: see /metrics\n');
    });
  }

  /** Resolves to the bound port. */
  async listen({ host, port }: HostPort): Promise<number> {
    await this.app.ready();
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    return (this.server.address() as AddressInfo).port;
  }

  async close(): Promise<void> {
    if (this.server.listening) {
      await new Promise<void>((resolve) => this.server.close(() => resolve()));
      this.server.closeAllConnections();
    }
    await this.app.close();
  }
}
