/**
 * Client faults: aborts before the body is sent, while waiting for the first token, and
 * mid-stream; and a reader that stalls on a 50 MB response, which must be met with
 * backpressure toward the upstream, not buffering.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { Agent, request } from 'undici';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.js';
import { startHostileUpstream, type Hostile } from '../fakes/hostile-upstream.js';
import { fdsSettle, openFds, report, rss, startInfermeterProcess, totalRequests, type Infermeter } from './harness.js';
import { scrape, sumSamples } from '../helpers.js';

let upstream: FakeUpstream;
let im: Infermeter;
before(async () => {
  upstream = await startFakeUpstream();
  im = await startInfermeterProcess(upstream.url);
});
after(async () => {
  await im.stop();
  await upstream.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Sends headers and part of a body over a raw socket, then vanishes. */
async function abortBeforeBody(url: string): Promise<void> {
  const { port } = new URL(url);
  const s = connect(Number(port), '127.0.0.1');
  await new Promise((r) => s.once('connect', r));
  s.write('POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"model":"fake-model","str');
  await sleep(20);
  s.destroy();
}

async function abortAfter(agent: Agent, ms: number, script: object): Promise<number> {
  const ac = new AbortController();
  const t = setTimeout(() => ac.abort(), ms);
  let bytes = 0;
  try {
    const res = await request(`${im.url}/v1/chat/completions`, { method: 'POST', dispatcher: agent, signal: ac.signal, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'fake-model', stream: true, fake: script }) });
    for await (const c of res.body) bytes += (c as Buffer).length;
  } catch {
    /* aborted */
  } finally {
    clearTimeout(t);
  }
  return bytes;
}

test('clients abort at random points: no leaked sockets, one outcome each, upstream told at once', async () => {
  const fdsBefore = openFds(im.pid);
  const before = await totalRequests(im.metricsUrl);
  const closedBefore = upstream.events.filter((e) => e.kind === 'closed-early').length;
  const agent = new Agent({ connections: 64 });
  let peak = rss(im.pid);
  let bytes = 0;
  const N = 150;
  // Batches small enough that no request waits in the client's own queue: each abort must
  // happen to a request that infermeter has already received.
  for (let batch = 0; batch < N; batch += 30) {
    const jobs: Promise<unknown>[] = [];
    for (let i = batch; i < batch + 30; i++) {
      const kind = i % 3;
      if (kind === 0) jobs.push(abortBeforeBody(im.url));
      else if (kind === 1) jobs.push(abortAfter(agent, 60 + (i % 50), { headersDelayMs: 2000 }).then((b) => (bytes += b)));
      else jobs.push(abortAfter(agent, 80 + (i % 200), { schedule: { firstMs: 10, chunks: 400, gapMs: 2 } }).then((b) => (bytes += b)));
    }
    await Promise.all(jobs);
    peak = Math.max(peak, rss(im.pid));
  }
  await agent.close();
  const counted = (await totalRequests(im.metricsUrl, 5000, before + N)) - before;
  const aborts = sumSamples((await scrape(im.metricsUrl)).samples, 'infermeter_requests_total', { outcome: 'client_abort' });
  await sleep(300);
  const upstreamClosed = upstream.events.filter((e) => e.kind === 'closed-early').length - closedBefore;
  const fdsAfter = await fdsSettle(im.pid, fdsBefore);
  const anomalies = Math.abs(N - counted) + Math.abs(N - aborts);
  report({ scenario: 'client aborts (before body / before first token / mid-stream)', requests: N, bytesCompared: bytes, anomalies, peakRssMiB: Math.round(peak / 2 ** 20), fdsBefore, fdsAfter });
  assert.equal(counted, N, 'every request ended with exactly one outcome');
  assert.equal(aborts, N, 'each one is a client_abort');
  assert.equal(upstreamClosed, (N / 3) * 2, 'every request that reached the upstream was closed there early');
  assert.ok(fdsAfter <= fdsBefore + 2, `descriptors ${fdsBefore} → ${fdsAfter}`);
});

test('a reader that stalls on a 50 MB response gets backpressure, not buffering', async () => {
  const hostile = await startHostileUpstream();
  const big = await startInfermeterProcess(hostile.url);
  try {
    const TOTAL = 50_000_000;
    const rss0 = rss(big.pid);
    const res = await request(`${big.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-fault': `big:${TOTAL}` }, body: '{"model":"hostile","stream":true,"stream_options":{"include_usage":true}}' });
    // Read nothing for 3 s: without backpressure the proxy would hold the whole 50 MB.
    await sleep(3000);
    const stalled = rss(big.pid);
    let got = 0;
    for await (const c of res.body) got += (c as Buffer).length;
    const growthMiB = (stalled - rss0) / 2 ** 20;
    report({ scenario: 'slow reader on a 50 MB response', requests: 1, bytesCompared: got, anomalies: got >= TOTAL && growthMiB < 20 ? 0 : 1, peakRssMiB: Math.round(stalled / 2 ** 20), fdsBefore: 0, fdsAfter: 0 });
    assert.ok(got >= TOTAL, `received ${got} bytes`);
    assert.ok(growthMiB < 20, `RSS grew ${growthMiB.toFixed(1)} MiB while the reader stalled`);
  } finally {
    await big.stop();
    await hostile.close();
  }
});
