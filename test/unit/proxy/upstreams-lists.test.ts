/**
 * The upstream set over real HTTP (src/proxy/upstreams.ts; README, "Several engines"): each
 * upstream's /v1/models read by the metrics side's one poller (src/metrics/models.ts) at start
 * and every --models-refresh (entries without a string id dropped, at most 100 kept, a failed
 * read keeping the last list) and handed to the router, the merged list first upstream first
 * and each id once, a refused upstream routed around and probed every second until its list
 * answers, and each upstream's pool built from its own entry (connections, headers timeout,
 * path prefix).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { request, type Dispatcher } from 'undici';
import { resolveUpstreams, type UpstreamDefaults } from '../../../src/lib/upstream-spec.js';
import { UpstreamSet } from '../../../src/proxy/upstreams.js';
import { ModelLabels } from '../../../src/metrics/models.js';
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

test('the poller reads every list over HTTP and hands it to the router; ids only, at most 100; a failed read keeps the last list; re-read every refresh; merged first upstream first', async () => {
  const a = await fake();
  const b = await fake();
  a.answer.body = list('m1', 'shared', 7, null);
  b.answer.body = { object: 'list', data: [{ id: 'shared', owned_by: 'b' }, { id: 'm2' }, { name: 'no-id' }, 'x'] };
  const specs = resolveUpstreams([{ name: 'a', url: a.url }, { name: 'b', url: `${b.url}/` }], D, 'u');
  const set = new UpstreamSet({ specs, connect: () => undefined, log: pino({ level: 'silent' }) });
  // As the metrics side wires them (src/side/side.ts): the first upstream, the others, their lists to the proxy loop.
  const poller = new ModelLabels({
    allowlist: [], upstream: specs[0]!.url, name: 'a', refreshSeconds: 0.2, log: pino({ level: 'silent' }),
    others: [{ url: specs[1]!.url, name: 'b' }], onLists: (lists) => set.update(lists),
  });
  try {
    const ready = set.start(10_000);
    await poller.start();
    await ready;
    const [ua, ub] = set.all as [typeof set.first, typeof set.first];
    assert.deepEqual([...ua.models], ['m1', 'shared']);
    assert.deepEqual([...ub.models], ['shared', 'm2']);
    assert.deepEqual(ub.listed, [{ id: 'shared', owned_by: 'b' }, { id: 'm2' }], 'entries kept as listed, without those lacking a string id');
    assert.deepEqual(b.asked.filter((p) => p.includes('models')), ['/v1/models'], 'the URL\'s trailing slash is not doubled');
    assert.deepEqual(JSON.parse(set.mergedModels().toString()), { object: 'list', data: [{ id: 'm1', object: 'model' }, { id: 'shared', object: 'model' }, { id: 'm2' }] });
    assert.equal(set.pick('m2'), ub);
    assert.equal(set.pick('m1'), ua);

    // A failed read (a status, or a body without a data list) keeps the last list; a good one replaces it.
    b.answer = { status: 500, body: list('gone') };
    const asked = b.asked.length;
    await until(() => b.asked.length >= asked + 2, 5000, 'two refreshes of b');
    assert.deepEqual([...ub.models], ['shared', 'm2']);
    b.answer = { status: 200, body: { models: ['m3'] } };
    await until(() => b.asked.length >= asked + 4, 5000, 'two more refreshes of b');
    assert.deepEqual([...ub.models], ['shared', 'm2']);
    b.answer = { status: 200, body: list(...Array.from({ length: 150 }, (_, i) => `n${i}`)) };
    await until(() => ub.models.has('n0'), 5000, 'the new list of b');
    assert.equal(ub.models.size, 100, 'at most 100 models per upstream');
    assert.equal(ub.listed.length, 100);
    assert.ok(!ub.models.has('m2'));
  } finally {
    poller.stop();
    await set.close();
    await stop([a, b]);
  }
});

test('a refused upstream is routed around, probed every second, and routed to again once its list answers; one upstream is never marked down', async () => {
  const a = await fake();
  const b = await fake();
  a.answer.body = list('shared');
  b.answer.body = list('shared');
  const warnings: string[] = [];
  const log = pino({ level: 'info' }, { write: (line: string) => void warnings.push(line) });
  const specs = resolveUpstreams([{ name: 'a', url: a.url }, { name: 'b', url: b.url }], D, 'u');
  const set = new UpstreamSet({ specs, connect: () => undefined, log });
  try {
    set.update([[{ id: 'shared' }], [{ id: 'shared' }]]);
    const [ua, ub] = set.all as [typeof set.first, typeof set.first];
    ua.inFlight = 5;
    assert.equal(set.pick('shared'), ub, 'fewer in flight');
    set.markDown(ub);
    set.markDown(ub);
    assert.equal(ub.down, true);
    assert.equal(warnings.filter((l) => l.includes('refused the connection')).length, 1, 'said once');
    assert.equal(set.pick('shared'), ua, 'a down replica loses even with fewer in flight');
    assert.equal(set.alternative('shared', ua), null, 'no alternative but a down one');
    const asked = b.asked.length;
    const aAsked = a.asked.length;
    await until(() => !ub.down, 5000, 'b answers its list again');
    assert.ok(b.asked.length > asked, 'the probe read b\'s list');
    assert.equal(a.asked.length, aAsked, 'the probe reads only down upstreams');
    assert.ok(warnings.some((l) => l.includes('answers again')));
    assert.equal(set.pick('shared'), ub);
    assert.equal(set.alternative('shared', ua), ub);
    ub.inFlight = 6;
    assert.equal(set.alternative('shared', ub), ua);
    // A failed probe keeps it down.
    b.answer = { status: 503, body: {} };
    set.markDown(ub);
    await sleep(1500);
    assert.equal(ub.down, true, 'still down while its list fails');
  } finally {
    // Closed here, so a failing run ends at once instead of held open by the two servers.
    await set.close();
    await stop([a, b]);
  }
  const one = new UpstreamSet({ specs: specs.slice(0, 1), connect: () => undefined, log });
  one.markDown(one.first);
  assert.equal(one.first.down, false, 'nothing to route around with one upstream');
  await one.close();
});

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

test('router: the fewest in flight wins from every scan start, and so does the alternative; a down replica loses to any up one', async () => {
  const specs = resolveUpstreams(['a', 'b', 'c'].map((name, i) => ({ name, url: `http://127.0.0.1:9/${i}` })), D, 'u');
  const set = new UpstreamSet({ specs, connect: () => undefined, log: pino({ level: 'silent' }) });
  set.update([[{ id: 'shared' }], [{ id: 'shared' }], [{ id: 'shared' }]]);
  const [a, b, c] = set.all as [typeof set.first, typeof set.first, typeof set.first];
  try {
    // The scan starts one further each call: three calls start at each upstream once.
    for (const [inFlight, want] of [[[1, 5, 9], 'a'], [[5, 1, 9], 'b'], [[9, 5, 1], 'c'], [[5, 9, 1], 'c']] as const) {
      [a.inFlight, b.inFlight, c.inFlight] = inFlight;
      assert.deepEqual([set.pick('shared'), set.pick('shared'), set.pick('shared')].map((u) => u.name), [want, want, want], `in flight ${inFlight.join('/')}`);
    }
    [a.inFlight, b.inFlight, c.inFlight] = [0, 9, 7];
    a.down = true;
    assert.deepEqual([set.pick('shared'), set.pick('shared'), set.pick('shared')].map((u) => u.name), ['c', 'c', 'c'], 'the down one loses despite 0 in flight');
    assert.equal(set.alternative('shared', a)?.name, 'c', 'of the others, the fewest in flight');
    [b.inFlight, c.inFlight] = [2, 7];
    assert.equal(set.alternative('shared', a)?.name, 'b', 'the first seen when it has fewer');
    assert.equal(set.alternative('shared', b)?.name, 'c', 'never a down one');
  } finally {
    await set.close();
  }
});
