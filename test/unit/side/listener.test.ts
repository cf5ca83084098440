/**
 * src/side/listener.ts, through a real socket: the answers the metrics listener always gave
 * hold on Fastify. 405 with `allow` for any method but GET and HEAD (a body of any type is
 * drained, never refused as 415); 404 with a pointer to /metrics; a path matched byte for byte
 * (percent-encoded or absolute-form targets match no route); HEAD from GET; the guard in front
 * of every route and of the 404/405 answers, but not of the kubelet probes.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import bcrypt from 'bcryptjs';
import { MetricsListener } from '../../../src/side/listener.js';
import { ProxyHealth, healthRoutes } from '../../../src/side/health.js';
import { WebGuard } from '../../../src/side/web-config.js';
import type { Routes } from '../../../src/metrics/consumer.js';

const hello: Routes = (app) => {
  app.get('/hello', (_req, reply) => reply.code(200).headers({ 'content-type': 'application/json' }).send(Buffer.from('{"hi":1}')));
};

/** The status line, the named headers (lower case) and the body of one raw HTTP/1.1 exchange. */
function exchange(port: number, head: string, body = ''): Promise<{ status: number; headers: Map<string, string>; body: string }> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => s.write(`${head}\r\nHost: x\r\nConnection: close\r\n${body ? `Content-Length: ${body.length}\r\n` : ''}\r\n${body}`));
    let raw = '';
    s.on('data', (d) => (raw += d.toString('latin1')));
    s.on('error', reject);
    s.on('end', () => {
      const [top, ...rest] = raw.split('\r\n\r\n');
      const lines = top!.split('\r\n');
      const headers = new Map(lines.slice(1).map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
      resolve({ status: Number(lines[0]!.split(' ')[1]), headers, body: rest.join('\r\n\r\n') });
    });
  });
}

const listeners: MetricsListener[] = [];
after(() => Promise.all(listeners.map((l) => l.close())));

async function start(guard: WebGuard): Promise<number> {
  const health = new ProxyHealth({ livenessTimeoutMs: 60_000, requiresUpstream: false });
  const l = new MetricsListener(null, guard, [hello, healthRoutes(health)]);
  listeners.push(l);
  return l.listen({ host: '127.0.0.1', port: 0 });
}

test('405 with allow, 404 with a pointer, byte-exact paths, HEAD from GET, content types as given', async () => {
  const port = await start(new WebGuard(null));
  const ok = await exchange(port, 'GET /hello?x=1 HTTP/1.1');
  assert.deepEqual([ok.status, ok.headers.get('content-type'), ok.body.trim()], [200, 'application/json', '{"hi":1}']);
  const head = await exchange(port, 'HEAD /hello HTTP/1.1');
  assert.deepEqual([head.status, head.body], [200, '']);
  for (const method of ['POST', 'DELETE', 'OPTIONS', 'PATCH', 'PROPFIND']) {
    const r = await exchange(port, `${method} /hello HTTP/1.1`, method === 'POST' ? 'a=1' : '');
    assert.deepEqual([r.status, r.headers.get('allow'), r.body], [405, 'GET, HEAD', ''], method);
  }
  const form = await exchange(port, 'POST /nowhere HTTP/1.1\r\nContent-Type: application/x-www-form-urlencoded', 'a=1');
  assert.equal(form.status, 405, 'a body of a type nobody parses is drained, not a 415');
  for (const target of ['/nowhere', '/hello/', '/%68ello', 'http://x/hello', '//hello']) {
    const r = await exchange(port, `GET ${target} HTTP/1.1`);
    assert.deepEqual([r.status, r.headers.get('content-type'), r.body], [404, 'text/plain', 'infermeter metrics listener: see /metrics\n'], target);
  }
  const probe = await exchange(port, 'GET /healthz HTTP/1.1');
  assert.deepEqual([probe.status, probe.headers.get('cache-control'), probe.body], [200, 'no-store', 'ok\n']);
});

test('the guard: 401 before every route, the 404 and the 405; the probes stay open', async () => {
  const port = await start(new WebGuard({ file: 'web.yml', tls: null, users: new Map([['alice', bcrypt.hashSync('pw', 4)]]) }));
  const auth = `Authorization: Basic ${Buffer.from('alice:pw').toString('base64')}`;
  for (const head of ['GET /hello HTTP/1.1', 'GET /nowhere HTTP/1.1', 'POST /hello HTTP/1.1', 'GET /%68ealthz HTTP/1.1']) {
    const r = await exchange(port, head);
    assert.deepEqual([r.status, r.headers.get('www-authenticate'), r.body], [401, 'Basic realm="infermeter", charset="UTF-8"', 'Unauthorized\n'], head);
  }
  assert.equal((await exchange(port, `GET /hello HTTP/1.1\r\n${auth}`)).status, 200);
  assert.equal((await exchange(port, `GET /nowhere HTTP/1.1\r\n${auth}`)).status, 404);
  assert.equal((await exchange(port, 'GET /readyz?verbose HTTP/1.1')).status, 503, 'readiness answers (not ready: no proxy loop) without credentials');
  assert.equal((await exchange(port, 'POST /healthz HTTP/1.1')).status, 405, 'a probe path is open to any method, as before');
});

test('the guard leaves exactly the probe paths open (any query), guards every look-alike; its refusals are text/plain', async () => {
  const echo: Routes = (app) => {
    for (const path of ['/metrics', '/api/v1/status']) app.get(path, (req, reply) => reply.code(200).header('content-type', 'text/plain').send(`served ${req.url}`));
  };
  const health = new ProxyHealth({ livenessTimeoutMs: 60_000, requiresUpstream: false });
  const guard = new WebGuard({ file: 'web.yml', tls: null, users: new Map([['alice', bcrypt.hashSync('right', 4)]]) });
  const l = new MetricsListener(null, guard, [echo, healthRoutes(health)]);
  listeners.push(l);
  const port = await l.listen({ host: '127.0.0.1', port: 0 });
  // The probes answer as they would without a web config: liveness ok, readiness 503 (no proxy loop listens).
  for (const [path, status] of [['/healthz', 200], ['/healthz?verbose=1', 200], ['/readyz', 503]] as const) {
    const r = await exchange(port, `GET ${path} HTTP/1.1`);
    assert.equal(r.status, status, path);
    assert.equal(r.headers.get('www-authenticate'), undefined, `${path} is not guarded`);
  }
  for (const head of ['GET /metrics HTTP/1.1', 'POST / HTTP/1.1', 'GET /healthz/x HTTP/1.1', 'GET /readyz2 HTTP/1.1', 'GET /api/v1/status?x=/healthz HTTP/1.1']) {
    const r = await exchange(port, head, head.startsWith('POST') ? 'a body' : '');
    assert.deepEqual([r.status, r.headers.get('content-type'), r.body], [401, 'text/plain', 'Unauthorized\n'], head);
  }
  const auth = `Authorization: Basic ${Buffer.from('alice:right').toString('base64')}`;
  const ok = await exchange(port, `GET /api/v1/status?x=/healthz HTTP/1.1\r\n${auth}`);
  assert.deepEqual([ok.status, ok.body], [200, 'served /api/v1/status?x=/healthz']);
});
