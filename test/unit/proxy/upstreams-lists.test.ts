/**
 * The upstream set over real HTTP (src/proxy/upstreams.ts; README, "Several engines"): each
 * upstream's /v1/models read at start and every --models-refresh (entries without a string id
 * dropped, at most 100 kept, a failed read keeping the last list), the merged list first
 * upstream first and each id once, a refused upstream routed around and probed every second
 * until its list answers, and each upstream's pool built from its own entry (connections,
 * headers timeout, path prefix).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { request, type Dispatcher } from 'undici';
import { resolveUpstreams, type UpstreamDefaults } from '../../../src/lib/upstream-spec.js';
import { UpstreamSet } from '../../../src/proxy/upstreams.js';
import { ENGINES } from '../../../src/lib/engines.js';

const D: UpstreamDefaults = {
  engine: 'vllm', engineMetrics: '', connections: 4096, connectTimeout: 10, headersTimeout: 600, idleTimeout: 300,
  upstreamCa: '', upstreamCert: '', upstreamKey: '', upstreamInsecureSkipVerify: false, engines: ENGINES,
};

interface Fake {
  url: string;
  /** What /v1/models answers now: a status and a body. */
  answer: { status: number; body: unknown };
  /** Paths asked, in order. */
  asked: string[];
  server: Server;
}

async function fake(other?: (req: IncomingMessage, res: ServerResponse) => void): Promise<Fake> {
  const f = { answer: { status: 200, body: { object: 'list', data: [] as unknown[] } }, asked: [] as string[] } as Fake;
  f.server = createServer((req, res) => {
    f.asked.push(req.url ?? '');
    if (req.url?.endsWith('/v1/models')) res.writeHead(f.answer.status, { 'content-type': 'application/json' }).end(JSON.stringify(f.answer.body));
    else if (other) other(req, res);
    else res.writeHead(404).end();
  });
  await new Promise<void>((r) => f.server.listen(0, '127.0.0.1', r));
  f.url = `http://127.0.0.1:${(f.server.address() as AddressInfo).port}`;
  return f;
}

const list = (...ids: unknown[]) => ({ object: 'list', data: ids.map((id) => ({ id, object: 'model' })) });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const stop = (fs: Fake[]) => Promise.all(fs.map((f) => new Promise<void>((r) => {
  f.server.closeAllConnections();
  f.server.close(() => r());
})));

async function until(check: () => boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out: ${what}`);
    await sleep(20);
  }
}

test('each pool is built from its entry: connections, headers timeout, path prefix', async () => {
  let open = 0;
  let most = 0;
  const slow = await fake((req, res) => {
    open++;
    most = Math.max(most, open);
    const delay = Number(new URL(req.url!, 'http://x').searchParams.get('ms') ?? 0);
    setTimeout(() => {
      open--;
      res.writeHead(200).end(req.url);
    }, delay);
  });
  const specs = resolveUpstreams([{ name: 'one-connection', url: `${slow.url}/base`, connections: 1, headersTimeout: '2s' }, { name: 'quick', url: slow.url, headersTimeout: '0.3s' }], D, 'u');
  const set = new UpstreamSet({ specs, connect: () => undefined, log: pino({ level: 'silent' }) });
  const [one, quick] = set.all as [typeof set.first, typeof set.first];
  const get = async (u: typeof one, path: string) => {
    const res = await request(`${slow.url}${u.basePath}${path}`, { dispatcher: u.pool as Dispatcher });
    return res.body.text();
  };
  try {
    assert.equal(one.basePath, '/base');
    assert.equal(quick.basePath, '');
    // Three at once over one connection: served one after the other, each within its 2 s headers timeout.
    assert.deepEqual(await Promise.all([1, 2, 3].map((i) => get(one, `/x?ms=100&i=${i}`))), [1, 2, 3].map((i) => `/base/x?ms=100&i=${i}`));
    assert.equal(most, 1, 'never more than the entry\'s one connection');
    // The other entry's 0.3 s headers timeout ends a 1.5 s wait.
    await assert.rejects(get(quick, '/x?ms=1500'), (err: Error & { code?: string }) => err.code === 'UND_ERR_HEADERS_TIMEOUT');
  } finally {
    await set.close();
    await stop([slow]);
  }
});
