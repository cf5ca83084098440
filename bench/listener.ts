/**
 * node dist/bench/listener.js [ROUNDS] — what Fastify's routing costs the proxy listener per
 * request against plain `node:http`: the same answer from a handler behind each, Fastify set up
 * as src/proxy/app.ts sets it up (one route, the raw request and response taken over in the
 * onRequest hook). Two servers of each kind, each its own process; in every round each serves
 * the same 20,000 small requests from 64 connections, and the figure is its CPU (utime + stime)
 * per request (LISTENER_REQUESTS sets how many; each round is printed as it ends, so a run cut
 * short keeps what it measured). The two of a kind show the machine's noise in the same run.
 * Run with a kind (`http` or `fastify`) it is one of those servers and prints its port.
 */
import { spawn } from 'node:child_process';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import { Pool } from 'undici';
import { cpuSeconds } from './lib.js';

const kind = process.argv[2];
if (kind === 'http' || kind === 'fastify') {
  const handle = (_req: IncomingMessage, res: ServerResponse) => res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
  const server = createServer({ requestTimeout: 0, keepAliveTimeout: 65_000, noDelay: true });
  if (kind === 'http') server.on('request', handle);
  else {
    const takeOver = (request: FastifyRequest, reply: FastifyReply) => {
      reply.hijack();
      handle(request.raw, reply.raw);
    };
    const router = Fastify({ serverFactory: (routing) => server.on('request', routing), exposeHeadRoutes: false, frameworkErrors: (_e, rq, rp) => takeOver(rq, rp) });
    server.removeAllListeners('clientError');
    router.addHook('onRequest', (request, reply, done) => {
      takeOver(request, reply);
      done();
    });
    router.route({ method: ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'], url: '/*', handler: () => {} });
    await router.ready();
  }
  server.listen(0, '127.0.0.1', () => process.stdout.write(`${(server.address() as AddressInfo).port}\n`));
} else {
  const rounds = Number(kind ?? 9);
  const self = fileURLToPath(import.meta.url);
  const start = (label: string, k: string) =>
    new Promise<{ label: string; pid: number; stop: () => void; pool: Pool; per: number[] }>((resolve) => {
      const child = spawn(process.execPath, [self, k], { stdio: ['ignore', 'pipe', 'inherit'] });
      child.stdout.once('data', (d: Buffer) => resolve({ label, pid: child.pid!, stop: () => child.kill(), pool: new Pool(`http://127.0.0.1:${Number(d)}`, { connections: 64 }), per: [] }));
    });
  const servers = [await start('http', 'http'), await start('fastify', 'fastify'), await start('http-2', 'http'), await start('fastify-2', 'fastify')];
  const N = Number(process.env['LISTENER_REQUESTS'] ?? 20_000);
  const cell = async (s: (typeof servers)[number]) => {
    let next = 0;
    const cpu0 = cpuSeconds(s.pid);
    const one = async () => {
      while (next++ < N) await (await s.pool.request({ path: '/v1/chat/completions', method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model":"m"}' })).body.text();
    };
    await Promise.all(Array.from({ length: 64 }, one));
    return ((cpuSeconds(s.pid) - cpu0) / N) * 1e6;
  };
  for (let w = 0; w < 2; w++) for (const s of servers) await cell(s);
  for (let r = 0; r < rounds; r++) {
    for (let i = 0; i < servers.length; i++) {
      const s = servers[(i + r) % servers.length]!;
      s.per.push(await cell(s));
    }
    console.log(`round ${r + 1}: ${servers.map((s) => `${s.label} ${s.per[r]!.toFixed(1)}`).join(', ')} µs/request`);
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
  console.log(`CPU µs per request, ${N} requests per cell, ${rounds} rounds, order rotating`);
  for (const s of servers) console.log(`${s.label.padEnd(10)} median ${median(s.per).toFixed(1).padStart(5)} | rounds ${s.per.map((x) => x.toFixed(1)).join(' ')}`);
  const of = (l: string) => servers.filter((s) => s.label.startsWith(l)).flatMap((s) => s.per);
  console.log(`fastify − http (medians over both servers of each kind): ${(median(of('fastify')) - median(of('http'))).toFixed(1)} µs per request`);
  for (const s of servers) {
    await s.pool.close();
    s.stop();
  }
}
