/** The upstream list (config), the router's choices, /proc port attribution and the GPU join rows, table-driven. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, writeFileSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { resolveUpstreams, singleUpstream, localPort, type UpstreamDefaults } from '../../../src/lib/upstream-spec.js';
import { parseProcNetTcp, parseStatPpid, processTreeOnPort, readProcTable, socketInode } from '../../../src/lib/proc-ports.js';
import { joinRows, parseComputeApps, unmatchedGpus } from '../../../src/collectors/gpu/attribution.js';
import { UpstreamSet } from '../../../src/proxy/upstreams.js';
import { resolveConfig } from '../../../src/config.js';
import { ENGINES } from '../../../src/lib/engines.js';
import { ConfigError } from '../../../src/lib/errors.js';

const D: UpstreamDefaults = {
  engine: 'vllm', engineMetrics: '', connections: 4096, connectTimeout: 10, headersTimeout: 600, idleTimeout: 300,
  upstreamCa: '', upstreamCert: '', upstreamKey: '', upstreamInsecureSkipVerify: false, engines: ENGINES,
};

test('upstreams: entries take the global settings they leave out; name defaults to host:port; engineMetrics to <url>/metrics', () => {
  const [a, b] = resolveUpstreams([
    { url: 'http://127.0.0.1:8001' },
    { name: 'small', url: 'http://10.0.0.5:8002/base', engine: 'sglang', gpus: [2, 'GPU-abc-1'], headersTimeout: '30s', connections: 8 },
  ], D, 'upstreams');
  assert.deepEqual(a, { ...withoutEngines(D), name: '127.0.0.1:8001', url: 'http://127.0.0.1:8001', gpus: [], engineMetrics: 'http://127.0.0.1:8001/metrics' });
  assert.equal(b!.name, 'small');
  assert.equal(b!.engine, 'sglang');
  assert.deepEqual(b!.gpus, ['2', 'GPU-abc-1']);
  assert.equal(b!.headersTimeout, 30);
  assert.equal(b!.connections, 8);
  assert.equal(b!.idleTimeout, 300);
  assert.equal(b!.engineMetrics, 'http://10.0.0.5:8002/base/metrics');
  assert.deepEqual(singleUpstream('http://h:9000', D).map((u) => [u.name, u.engineMetrics]), [['h:9000', 'http://h:9000/metrics']]);
});

function withoutEngines(d: UpstreamDefaults): Omit<UpstreamDefaults, 'engines' | 'engineMetrics'> {
  const { engines: _e, engineMetrics: _m, ...rest } = d;
  return rest;
}

test('upstreams: bad entries stop startup naming the entry and key', () => {
  const cases: [unknown, RegExp][] = [
    [[], /upstreams: expected a non-empty list/],
    [[{ name: 'x' }], /upstreams\[0\]\.url: is required/],
    [[{ url: 'ftp://h' }], /upstreams\[0\]\.url: expected an http or https URL/],
    [[{ url: 'http://a:1', engine: 'nope' }], /upstreams\[0\]\.engine: expected one of vllm/],
    [[{ url: 'http://a:1', gpus: ['x'] }], /upstreams\[0\]\.gpus: expected a GPU index/],
    [[{ url: 'http://a:1', name: 'has space' }], /upstreams\[0\]\.name: expected a name/],
    [[{ url: 'http://a:1', colour: 'red' }], /upstreams\[0\]: unknown key\(s\): colour/],
    [[{ url: 'http://a:1' }, { url: 'http://a:1' }], /upstreams\[1\]\.name: "a:1" names two upstreams/],
  ];
  for (const [raw, re] of cases) assert.throws(() => resolveUpstreams(raw, D, 'upstreams'), (e: unknown) => e instanceof ConfigError && re.test(e.message), String(re));
});

test('config: upstreams: in the file makes --upstream optional; a --upstream flag wins; both keys in the file is an error', () => {
  const dir = mkdtempSync(join(tmpdir(), 'infermeter-cfg-'));
  const file = join(dir, 'c.yaml');
  writeFileSync(file, 'upstreams:\n  - { name: a, url: "http://127.0.0.1:8001", gpus: [0] }\n  - { name: b, url: "http://127.0.0.1:8002", engine: llamacpp }\n');
  const cfg = resolveConfig({ config: file }, {});
  assert.deepEqual(cfg.upstreams.map((u) => [u.name, u.engine, u.gpus]), [['a', 'vllm', ['0']], ['b', 'llamacpp', []]]);
  assert.equal(cfg.upstream, 'http://127.0.0.1:8001');
  const flag = resolveConfig({ config: file, upstream: 'http://127.0.0.1:9999' }, {});
  assert.deepEqual(flag.upstreams.map((u) => u.url), ['http://127.0.0.1:9999']);
  writeFileSync(file, 'upstream: http://127.0.0.1:1\nupstreams:\n  - { url: "http://127.0.0.1:8001" }\n');
  assert.throws(() => resolveConfig({ config: file }, {}), /give either upstream or upstreams/);
  const one = resolveConfig({ upstream: 'http://127.0.0.1:8000' }, {});
  assert.equal(one.upstreams.length, 1);
  assert.equal(one.upstreams[0]!.name, '127.0.0.1:8000');
});

test('localPort: loopback and the machine\'s own names are local; anything else is not', () => {
  assert.equal(localPort('http://127.0.0.1:8001'), 8001);
  assert.equal(localPort('http://localhost'), 80);
  assert.equal(localPort('https://[::1]'), 443);
  assert.equal(localPort('http://node7:8000', ['node7']), 8000);
  assert.equal(localPort('http://10.1.2.3:8000'), null);
});

const TCP = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F41 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 111 1 0000000000000000 100 0 0 10 0
   1: 0100007F:1F42 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 222 1 0000000000000000 100 0 0 10 0
   2: 0100007F:1F41 0100007F:C350 01 00000000:00000000 00:00000000 00000000  1000        0 333 1 0000000000000000 20 4 30 10 -1
   garbage line
`;

test('/proc parsers: LISTEN sockets by port, socket fd links, ppid past a command name with spaces and parentheses', () => {
  assert.deepEqual(parseProcNetTcp(TCP), [{ port: 8001, inode: 111 }, { port: 8002, inode: 222 }]);
  assert.equal(socketInode('socket:[4242]'), 4242);
  assert.equal(socketInode('/dev/null'), null);
  assert.equal(parseStatPpid('123 (vllm (api) server) S 77 123 123 0 -1'), 77);
  assert.equal(parseStatPpid('garbage'), null);
});

test('processTreeOnPort: the listener and all its descendants, nobody else', () => {
  const procs = [
    { pid: 10, ppid: 1, sockets: [111] }, // listens on 8001
    { pid: 11, ppid: 10, sockets: [] }, // EngineCore
    { pid: 12, ppid: 11, sockets: [] }, // TP worker
    { pid: 20, ppid: 1, sockets: [222] }, // listens on 8002
    { pid: 30, ppid: 1, sockets: [] },
  ];
  const listening = parseProcNetTcp(TCP);
  assert.deepEqual([...processTreeOnPort(8001, listening, procs)].sort(), [10, 11, 12]);
  assert.deepEqual([...processTreeOnPort(8002, listening, procs)], [20]);
  assert.deepEqual([...processTreeOnPort(9999, listening, procs)], []);
});

test('readProcTable reads a /proc-shaped directory (unreadable entries skipped)', async () => {
  const root = mkdtempSync(join(tmpdir(), 'infermeter-proc-'));
  mkdirSync(join(root, 'net'));
  writeFileSync(join(root, 'net/tcp'), TCP);
  for (const [pid, ppid, inode] of [[10, 1, 111], [11, 10, 0]] as const) {
    mkdirSync(join(root, `${pid}/fd`), { recursive: true });
    writeFileSync(join(root, `${pid}/stat`), `${pid} (node) S ${ppid} 0 0`);
    if (inode) symlinkSync(`socket:[${inode}]`, join(root, `${pid}/fd/3`));
    symlinkSync('/dev/null', join(root, `${pid}/fd/0`));
  }
  mkdirSync(join(root, '99')); // no stat: skipped
  const t = await readProcTable(root);
  assert.deepEqual(t.listening.map((l) => l.port), [8001, 8002]);
  assert.deepEqual(t.procs.sort((x, y) => x.pid - y.pid), [{ pid: 10, ppid: 1, sockets: [111] }, { pid: 11, ppid: 10, sockets: [] }]);
  assert.deepEqual([...processTreeOnPort(8001, t.listening, t.procs)].sort(), [10, 11]);
});

test('GPU join rows: gpus: by index or UUID, else compute apps on the port\'s tree; sorted by GPU; unknown ids reported', () => {
  const gpus = [0, 1, 2, 3].map((index) => ({ index, uuid: `GPU-000${index}` }));
  const apps = parseComputeApps('pid, gpu_uuid\n11, GPU-0002\n12, GPU-0003\n 500, GPU-0001\n\nbad, row\n13, [N/A]\n');
  assert.deepEqual(apps, [{ pid: 11, uuid: 'GPU-0002' }, { pid: 12, uuid: 'GPU-0003' }, { pid: 500, uuid: 'GPU-0001' }]);
  const targets = [
    { name: 'big', gpus: ['1', 'GPU-0000', '7'], tree: null },
    { name: 'auto', gpus: [], tree: new Set([10, 11, 12]) },
    { name: 'remote', gpus: [], tree: null },
  ];
  assert.deepEqual(joinRows(targets, gpus, apps), [
    { gpu: '0', uuid: 'GPU-0000', upstream: 'big' },
    { gpu: '1', uuid: 'GPU-0001', upstream: 'big' },
    { gpu: '2', uuid: 'GPU-0002', upstream: 'auto' },
    { gpu: '3', uuid: 'GPU-0003', upstream: 'auto' },
  ]);
  assert.deepEqual(unmatchedGpus(targets, gpus), ['big: 7']);
});

test('router: by listed model; replicas by fewest in flight (ties rotate); down ones avoided; unknown model and no model to the first; one upstream never polls', async () => {
  const specs = resolveUpstreams([{ name: 'a', url: 'http://127.0.0.1:9' }, { name: 'b', url: 'http://127.0.0.1:9/b' }, { name: 'c', url: 'http://127.0.0.1:9/c' }], D, 'u');
  const set = new UpstreamSet({ specs, connect: () => undefined, log: pino({ level: 'silent' }) });
  const [a, b, c] = set.all as [typeof set.all[0], typeof set.all[0], typeof set.all[0]];
  a.models = new Set(['m1']);
  b.models = new Set(['m2', 'shared']);
  c.models = new Set(['shared']);
  assert.equal(set.pick('m2'), b);
  assert.equal(set.pick('m1'), a);
  assert.equal(set.pick('unknown'), a);
  assert.equal(set.pick(''), a);
  const names = Array.from({ length: 6 }, () => set.pick('shared').name);
  assert.deepEqual(new Set(names), new Set(['b', 'c']), 'ties rotate between replicas');
  b.inFlight = 3;
  c.inFlight = 2;
  assert.equal(set.pick('shared'), c);
  c.down = true;
  assert.equal(set.pick('shared'), b, 'a refused replica is avoided while another is up');
  assert.equal(set.alternative('shared', b), null);
  c.down = false;
  assert.equal(set.alternative('shared', b), c);
  assert.equal(b.basePath, '/b');
  assert.deepEqual(JSON.parse(set.mergedModels().toString()), { object: 'list', data: [] });
  b.listed = [{ id: 'm2', object: 'model' }, { id: 'shared' }];
  c.listed = [{ id: 'shared' }];
  assert.deepEqual(JSON.parse(set.mergedModels().toString()).data.map((m: { id: string }) => m.id), ['m2', 'shared']);
  await set.close();
  const one = new UpstreamSet({ specs: specs.slice(0, 1), connect: () => undefined, log: pino({ level: 'silent' }) });
  one.first.models = new Set();
  assert.equal(one.routed, false);
  assert.equal(one.pick('anything'), one.first);
  await one.start(); // resolves at once: nothing is polled
  await one.close();
});

test('router: lists come from the metrics side (update): the first one ends the start-up wait; a null list keeps what the upstream had', async () => {
  const specs = resolveUpstreams([{ name: 'a', url: 'http://127.0.0.1:9' }, { name: 'b', url: 'http://127.0.0.1:9/b' }], D, 'u');
  const set = new UpstreamSet({ specs, connect: () => undefined, log: pino({ level: 'silent' }) });
  const started = performance.now();
  const ready = set.start(10_000);
  setTimeout(() => set.update([[{ id: 'm1', object: 'model' }], [{ id: 'm2' }, { id: 'shared' }]]), 20);
  await ready;
  assert.ok(performance.now() - started < 5_000, 'the first lists end the wait');
  assert.equal(set.pick('m2').name, 'b');
  assert.deepEqual(JSON.parse(set.mergedModels().toString()).data, [{ id: 'm1', object: 'model' }, { id: 'm2' }, { id: 'shared' }]);
  set.update([null, [{ id: 'm3' }]]);
  assert.equal(set.pick('m1').name, 'a', 'a keeps its list');
  assert.equal(set.pick('m2').name, 'a', 'b no longer lists m2: the first upstream takes it');
  assert.equal(set.pick('m3').name, 'b');
  set.update([Array.from({ length: 150 }, (_, i) => ({ id: `x${i}` })), null]);
  assert.equal(set.all[0]!.listed.length, 100, 'at most 100 entries per upstream');
  await set.close();
});
