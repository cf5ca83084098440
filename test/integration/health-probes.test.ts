/**
 * /readyz and /healthz tell the truth: not ready before the proxy listens, not ready from
 * the moment a drain starts (while the streams in flight keep flowing), not healthy while a
 * proxy loop is wedged, in a single process and under --workers. The wedge and the late
 * listener are the test-only hooks of lib/test-hooks.ts (INFERMETER_TEST_HOOKS=1).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.js';
import { InfermeterProcess } from '../fakes/infermeter-process.js';
import { freePort, startProxy } from '../helpers.js';
import { installBlockSwitch, listenGate, testHooksOn } from '../../src/lib/test-hooks.js';

let upstream: FakeUpstream;
before(async () => {
  upstream = await startFakeUpstream();
});
after(() => upstream.close());

async function probe(base: string, path: '/readyz' | '/healthz'): Promise<{ status: number; body: string }> {
  const res = await request(`${base}${path}`, { headersTimeout: 5000 });
  return { status: res.statusCode, body: await res.body.text() };
}

/** Polls until `pred` holds; returns the answer that satisfied it. */
async function until(base: string, path: '/readyz' | '/healthz', pred: (a: { status: number; body: string }) => boolean, timeoutMs = 5000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const a = await probe(base, path).catch(() => ({ status: 0, body: 'no answer' }));
    if (pred(a)) return a;
    if (Date.now() > deadline) throw new Error(`${path} never matched; last: ${a.status} ${a.body}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
  });
}

const streamBody = (chunks: number, gapMs: number) => JSON.stringify({ model: 'fake-model', stream: true, fake: { schedule: { firstMs: 5, chunks, gapMs } } });

test('/readyz answers 503 from the start of a drain while a stream in flight keeps flowing; /healthz stays 200', async () => {
  const proxy = await startProxy({ upstream: upstream.url, shutdownTimeout: '10s' });
  const base = proxy.metricsUrl.replace(/\/metrics$/, '');
  assert.equal((await probe(base, '/readyz')).status, 200);
  const res = await request(`${proxy.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: streamBody(40, 40) });
  const arrivals: { at: number; text: string }[] = [];
  const reading = (async () => {
    for await (const c of res.body) arrivals.push({ at: performance.now(), text: (c as Buffer).toString() });
  })();
  while (!arrivals.some((a) => a.text.includes('tok2'))) await new Promise((r) => setTimeout(r, 5));
  const closing = proxy.close();
  const notReady = await until(base, '/readyz', (a) => a.status === 503, 1000);
  const notReadyAt = performance.now();
  assert.match(notReady.body, /draining/);
  assert.equal((await probe(base, '/healthz')).status, 200, 'a draining process is alive: no restart');
  await reading;
  const all = arrivals.map((a) => a.text).join('');
  assert.match(all, /tok39[\s\S]*\[DONE\]/, 'the stream finished whole');
  assert.ok(arrivals.filter((a) => a.at > notReadyAt).length >= 10, 'chunks kept coming after /readyz said 503');
  await closing;
});

test('/readyz is not 200 before the proxy listens (the listener opens late by a test hook)', async () => {
  const metricsPort = await freePort();
  const proxyPort = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'infermeter-listen-'));
  const gate = join(dir, 'listen');
  // The proxy listener opens when the test says so (a file appears), not after a delay a busy
  // machine could spend before the metrics side even answers.
  const p = InfermeterProcess.forUpstream(upstream.url, ['--listen', `127.0.0.1:${proxyPort}`, '--metrics-listen', `127.0.0.1:${metricsPort}`], { INFERMETER_TEST_HOOKS: '1', INFERMETER_TEST_LISTEN_WHEN: gate });
  // Ready (the log line) only once the test opens the listener: the whole test's time, not start-up's.
  const started = p.start(60_000);
  const base = `http://127.0.0.1:${metricsPort}`;
  try {
    // The metrics side answers first, and says no while the proxy port refuses connections.
    const early = await until(base, '/readyz', (a) => a.status !== 0, 15_000);
    assert.equal(early.status, 503);
    assert.match(early.body, /starting/);
    assert.equal(await canConnect(proxyPort), false, 'the proxy is not listening yet');
    for (let i = 0; i < 5; i++) {
      assert.equal((await probe(base, '/readyz')).status, 503, 'not ready while the proxy does not listen');
      await new Promise((r) => setTimeout(r, 20));
    }
    writeFileSync(gate, '');
    // From the first 200 on, the proxy accepts.
    await until(base, '/readyz', (a) => a.status === 200, 15_000);
    assert.equal(await canConnect(proxyPort), true, 'ready means the proxy accepts connections');
    await started;
  } finally {
    await p.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('/healthz answers 503 while the proxy loop is blocked (test-only switch), and 200 again after', async () => {
  const p = InfermeterProcess.forUpstream(upstream.url, ['--liveness-timeout', '1s'], { INFERMETER_TEST_HOOKS: '1', INFERMETER_TEST_BLOCK_MS: '3000' });
  await p.start();
  const base = p.metricsUrl;
  try {
    await until(base, '/healthz', (a) => a.status === 200);
    p.signal('SIGUSR2');
    const sick = await until(base, '/healthz', (a) => a.status === 503, 3000);
    assert.match(sick.body, /proxy loop 0 has sent no heartbeat for [0-9.]+ s \(--liveness-timeout 1s\)/);
    assert.equal((await probe(base, '/readyz')).status, 503, 'a wedged loop is not ready either');
    await until(base, '/healthz', (a) => a.status === 200, 5000);
  } finally {
    await p.stop();
  }
});

test('the block switch does not ship enabled: without INFERMETER_TEST_HOOKS=1 it is not installed', async () => {
  assert.equal(testHooksOn({}), false);
  assert.equal(testHooksOn({ INFERMETER_TEST_HOOKS: '0' }), false);
  let opened = false;
  await listenGate({ INFERMETER_TEST_LISTEN_WHEN: '/nonexistent/infermeter-listen' }).then(() => (opened = true));
  assert.equal(opened, true, 'without the variable the listener does not wait for the file');
  const before = process.listenerCount('SIGUSR2');
  installBlockSwitch({ INFERMETER_TEST_BLOCK_MS: '1000' });
  assert.equal(process.listenerCount('SIGUSR2'), before);
  // A real process without the variable: SIGUSR2 has Node's default action (it ends the process), no block.
  const p = InfermeterProcess.forUpstream(upstream.url, [], { INFERMETER_TEST_BLOCK_MS: '3000' });
  await p.start();
  p.signal('SIGUSR2');
  assert.equal(await p.exited(), 'SIGUSR2');
});

test('--workers 2: ready once the workers listen; a blocked worker turns /healthz 503 naming it; SIGTERM turns /readyz 503 while streams flow', async () => {
  const p = InfermeterProcess.forUpstream(upstream.url, ['--workers', '2', '--liveness-timeout', '1s', '--shutdown-timeout', '10s'], { INFERMETER_TEST_HOOKS: '1', INFERMETER_TEST_BLOCK_MS: '2500' });
  await p.start();
  const base = p.metricsUrl;
  try {
    const ready = await until(base, '/readyz', (a) => a.status === 200);
    assert.match(ready.body, /2 proxy loop\(s\) listening/);
    const { processTree } = await import('../../bench/lib.js');
    const workers = processTree(p.pid).slice(1);
    assert.equal(workers.length, 2);
    process.kill(workers[1]!, 'SIGUSR2');
    const sick = await until(base, '/healthz', (a) => a.status === 503, 3000);
    assert.match(sick.body, /proxy loop \d+ has sent no heartbeat/);
    await until(base, '/healthz', (a) => a.status === 200, 5000);

    const res = await request(`${p.proxyUrl}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: streamBody(30, 40) });
    let text = '';
    const reading = (async () => {
      for await (const c of res.body) text += (c as Buffer).toString();
    })();
    while (!text.includes('tok2')) await new Promise((r) => setTimeout(r, 5));
    p.signal('SIGTERM');
    const draining = await until(base, '/readyz', (a) => a.status === 503, 1000);
    assert.match(draining.body, /draining/);
    const at = text.length;
    await reading;
    assert.ok(text.length > at && /tok29[\s\S]*\[DONE\]/.test(text), 'the stream kept flowing to its end');
    assert.equal(await p.exited(), 0);
  } finally {
    await p.stop();
  }
});

test('--ready-requires-upstream: 503 naming the upstream while it does not answer, 200 once it does (even with an allowlist)', async () => {
  const port = await freePort();
  const down = await startProxy({ upstream: `http://127.0.0.1:${port}`, readyRequiresUpstream: 'true', models: 'fake-model' });
  try {
    const base = down.metricsUrl.replace(/\/metrics$/, '');
    // Once the listener is up, the one reason left is the upstream (awaited, not 300 ms).
    const a = await until(base, '/readyz', (x) => x.body.startsWith('upstream:'), 5000);
    assert.equal(a.status, 503);
    assert.match(a.body, /^upstream: no answer from the upstream/);
    assert.equal((await probe(base, '/healthz')).status, 200, 'the upstream being down is no reason to restart infermeter');
  } finally {
    await down.close();
  }
  const up = await startProxy({ upstream: upstream.url, readyRequiresUpstream: 'true', models: 'fake-model' });
  try {
    await until(up.metricsUrl.replace(/\/metrics$/, ''), '/readyz', (x) => x.status === 200, 3000);
  } finally {
    await up.close();
  }
});
