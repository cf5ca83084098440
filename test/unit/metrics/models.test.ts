/**
 * src/metrics/models.ts: which upstream lists which model (issue 26), the mapping the
 * bottleneck verdict reads each model's own engine and GPUs through.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { ModelLabels } from '../../../src/metrics/models.js';

const servers: Server[] = [];
after(() => Promise.all(servers.map((s) => new Promise((r) => s.close(r)))));

/** A /v1/models that answers `lists[n]` on its n-th read (the last one after that), or 500 for null. */
async function upstream(...lists: (string[] | null)[]): Promise<string> {
  let n = 0;
  const server = createServer((_req, res) => {
    const ids = lists[Math.min(n++, lists.length - 1)];
    if (ids === null || ids === undefined) return void res.writeHead(500).end();
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data: ids.map((id) => ({ id, object: 'model' })) }));
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

test('upstreamsOf names the upstreams whose list has the model; a list that fails to read keeps its last answer', async () => {
  const a = await upstream(['model-a', 'shared']);
  const b = await upstream(['model-b', 'shared'], null);
  const labels = new ModelLabels({ allowlist: [], upstream: a, name: 'engine-a', refreshSeconds: 3600, log: pino({ level: 'silent' }), others: [{ url: b, name: 'engine-b' }] });
  await labels.refresh();
  assert.deepEqual(labels.upstreamsOf('model-a'), ['engine-a']);
  assert.deepEqual(labels.upstreamsOf('model-b'), ['engine-b']);
  assert.deepEqual(labels.upstreamsOf('shared'), ['engine-a', 'engine-b']);
  assert.deepEqual(labels.upstreamsOf('other'), []);
  await labels.refresh();
  assert.deepEqual(labels.upstreamsOf('model-b'), ['engine-b'], 'engine-b answered 500: its GPUs are still its own');
  labels.stop();
});

test('an allowlist labels without reading any list: no upstream is known, so the verdict reads the whole machine', () => {
  const labels = new ModelLabels({ allowlist: ['model-a'], upstream: 'http://127.0.0.1:9', refreshSeconds: 3600, log: pino({ level: 'silent' }) });
  assert.equal(labels.label('model-a'), 'model-a');
  assert.deepEqual(labels.upstreamsOf('model-a'), []);
});

test('several upstreams: the one poller hands each one\'s entries on after the first read, then only on a change; an allowlist still reads them for routing', async () => {
  const a = await upstream(['model-a'], ['model-a'], ['model-a', 'model-c']);
  const b = await upstream(['model-b'], null);
  const handed: unknown[] = [];
  const labels = new ModelLabels({
    allowlist: ['model-a'], upstream: a, name: 'engine-a', refreshSeconds: 3600, log: pino({ level: 'silent' }),
    others: [{ url: b, name: 'engine-b' }], onLists: (lists) => handed.push(lists.map((l) => l?.map((m) => m.id) ?? null)),
  });
  await labels.start();
  await labels.refresh(); // the read start() began
  assert.deepEqual(handed, [[['model-a'], ['model-b']]], 'read at start under an allowlist');
  await labels.refresh();
  assert.equal(handed.length, 1, 'the same lists are not handed on twice (engine-b failed and keeps its last)');
  await labels.refresh();
  assert.deepEqual(handed.at(-1), [['model-a', 'model-c'], ['model-b']], 'a change is handed on; engine-b still keeps its last list');
  assert.equal(handed.length, 2);
  assert.equal(labels.label('model-c'), 'other', 'the allowlist alone decides the labels');
  assert.deepEqual(labels.upstreamsOf('model-a'), [], 'and ties none to an upstream: the verdict reads the whole machine (docs/bottleneck.md)');
  labels.stop();
});

test('one upstream: nothing is handed on (there is nothing to route)', async () => {
  const a = await upstream(['model-a']);
  let handed = 0;
  const labels = new ModelLabels({ allowlist: [], upstream: a, refreshSeconds: 3600, log: pino({ level: 'silent' }), onLists: () => handed++ });
  await labels.start();
  assert.equal(labels.label('model-a'), 'model-a');
  assert.equal(handed, 0);
  labels.stop();
});

test('several upstreams: the "upstream models listed" line names every upstream with its models', async () => {
  const a = await upstream(['model-a']);
  const b = await upstream(['model-b', 'shared']);
  const lines: Record<string, unknown>[] = [];
  const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
  const labels = new ModelLabels({ allowlist: [], upstream: a, name: 'engine-a', refreshSeconds: 3600, log, others: [{ url: b, name: 'engine-b' }] });
  await labels.refresh();
  labels.stop();
  const listed = lines.filter((l) => l['msg'] === 'upstream models listed');
  assert.equal(listed.length, 1);
  assert.deepEqual(listed[0]!['upstreams'], { 'engine-a': ['model-a'], 'engine-b': ['model-b', 'shared'] });
  assert.deepEqual(listed[0]!['models'], ['model-a', 'model-b', 'shared']);
});

test('a dead upstream\'s models keep their label for LIST_KEPT_MS, then become other (issue 45, item 4)', async () => {
  const a = await upstream(['model-a']);
  const b = await upstream(['model-b'], null);
  let now = 1_000_000;
  const labels = new ModelLabels({ allowlist: [], upstream: a, name: 'engine-a', refreshSeconds: 3600, log: pino({ level: 'silent' }), others: [{ url: b, name: 'engine-b' }], now: () => now, listKeptMs: 60_000 });
  await labels.refresh();
  assert.deepEqual([labels.label('model-a'), labels.label('model-b')], ['model-a', 'model-b']);
  now += 59_000;
  await labels.refresh(); // engine-b answers 500 from now on
  assert.equal(labels.label('model-b'), 'model-b', 'unreachable, but its last list still labels');
  assert.deepEqual(labels.upstreamsOf('model-b'), ['engine-b']);
  now += 2_000;
  await labels.refresh();
  assert.equal(labels.label('model-b'), 'other', 'past the keep time it serves nothing');
  assert.deepEqual(labels.upstreamsOf('model-b'), []);
  assert.equal(labels.label('model-a'), 'model-a');
  labels.stop();
});

test('one upstream that stops answering: its models keep their label for the keep time, then other', async () => {
  const a = await upstream(['model-a'], null);
  let now = 1_000_000;
  const labels = new ModelLabels({ allowlist: [], upstream: a, refreshSeconds: 3600, log: pino({ level: 'silent' }), now: () => now, listKeptMs: 60_000 });
  await labels.refresh();
  now += 30_000;
  await labels.refresh();
  assert.equal(labels.label('model-a'), 'model-a');
  now += 31_000;
  await labels.refresh();
  assert.equal(labels.label('model-a'), 'other');
  labels.stop();
});
