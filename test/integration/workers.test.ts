/**
 * --workers: several proxy processes behind one listener, one exact view on the metrics
 * side. Real worker processes (node:cluster, forked by this test process as the primary or
 * by the CLI), real sockets, the fake upstream.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import cluster from 'node:cluster';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.js';
import { ROOT, scrape, startProxy, streamUntilThenAbort, sumSamples, upstreamEvent, waitForMetrics, type TestProxy } from '../helpers.js';
import { cpuSeconds, processTree } from '../../bench/lib.js';

let upstream: FakeUpstream;
let proxy: TestProxy;
const dir = mkdtempSync(join(tmpdir(), 'infermeter-workers-'));
const configFile = join(dir, 'config.yml');
// TTFT within 1 s is met by every stream here; E2E within 2 ms by none (the first token alone takes 5 ms): goodput must be 0.
writeFileSync(configFile, 'slos:\n  default:\n    ttft: 1s\n    e2e: 2ms\n');

before(async () => {
  upstream = await startFakeUpstream();
  proxy = await startProxy({ upstream: upstream.url, workers: '2', config: configFile, shutdownTimeout: '5s' });
});
after(async () => {
  await proxy.close();
  await upstream.close();
});

const body = (chunks: number, gapMs: number, pause?: string) => JSON.stringify({ model: 'fake-model', stream: true, fake: { schedule: { firstMs: 5, chunks, gapMs }, ...(pause ? { pause: { afterChunks: 2, gate: pause } } : {}) } });

/** `pause`: the upstream stops after the first token until the test opens that gate (the stream stays in flight for as long as the test needs). */
async function stream(agent: Agent, url: string, chunks: number, gapMs: number, signal?: AbortSignal, pause?: string): Promise<string> {
  const res = await request(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: body(chunks, gapMs, pause), dispatcher: agent, signal });
  return await res.body.text();
}

const liveWorkers = () => Object.values(cluster.workers ?? {}).filter((w) => w && !w.isDead());

test('exact counts across workers: requests, tokens, TTFT, SLO verdicts, goodput, in flight', async () => {
  assert.equal(liveWorkers().length, 2);
  const cpu0 = liveWorkers().map((w) => cpuSeconds(w!.process.pid!));
  const agent = new Agent({ connections: 40 });
  // 20 long streams held open (paused after their first token until the short ones are done,
  // not merely long enough on an idle machine): the in-flight gauge is the sum over both workers.
  const held = Array.from({ length: 20 }, () => stream(agent, proxy.url, 30, 40, undefined, 'held'));
  await waitForMetrics(proxy.metricsUrl, (s) => sumSamples(s, 'infermeter_requests_in_flight') === 20, 15_000);
  // Meanwhile 200 short ones, 20 connections at a time.
  for (let wave = 0; wave < 10; wave++) await Promise.all(Array.from({ length: 20 }, () => stream(agent, proxy.url, 5, 1)));
  upstream.release('held');
  const texts = await Promise.all(held);
  assert.ok(texts.every((t) => t.includes('[DONE]')));
  await agent.close();
  const s = await waitForMetrics(proxy.metricsUrl, (x) => sumSamples(x, 'infermeter_requests_total') === 220 && sumSamples(x, 'infermeter_requests_in_flight') === 0, 5000);
  assert.equal(sumSamples(s, 'infermeter_requests_total', { outcome: 'ok' }), 220);
  assert.equal(sumSamples(s, 'infermeter_tokens_total', { gen_ai_token_type: 'output' }), 20 * 30 + 200 * 5);
  assert.equal(sumSamples(s, 'gen_ai_server_time_to_first_token_seconds_count'), 220);
  assert.equal(sumSamples(s, 'infermeter_slo_requests_total', { slo: 'ttft', result: 'good' }), 220);
  assert.equal(sumSamples(s, 'infermeter_slo_requests_total', { slo: 'e2e', result: 'bad' }), 220);
  assert.equal(sumSamples(s, 'infermeter_slo_judged_requests_total'), 220);
  assert.equal(sumSamples(s, 'infermeter_goodput_requests_total'), 0);
  // Both workers relayed: each spent CPU on it (connections are dealt round-robin).
  const spent = liveWorkers().map((w, i) => cpuSeconds(w!.process.pid!) - cpu0[i]!);
  assert.ok(spent.every((x) => x > 0.02), `CPU per worker: ${spent.join(', ')} s`);
});

test('a client abort through a worker aborts the upstream request within 100 ms (ten of its 10 ms gaps); outcome client_abort', async () => {
  const before = (await scrape(proxy.metricsUrl)).samples;
  const aborts0 = sumSamples(before, 'infermeter_requests_total', { outcome: 'client_abort' });
  const closed0 = upstream.events.filter((e) => e.kind === 'closed-early').length;
  const agent = new Agent({ connections: 4 });
  const abortedAt = await streamUntilThenAbort(proxy.url, { model: 'fake-model', stream: true, fake: { schedule: { firstMs: 5, chunks: 1000, gapMs: 10, relativeGaps: true } } }, 'tok3', agent);
  const closed = await upstreamEvent(upstream, 'closed-early', closed0);
  assert.ok(closed, 'the upstream saw its request closed');
  // By the upstream's own clock (client-abort.test.ts): 5 writes when the client left, ten more at most.
  assert.ok(closed.written! <= 5 + 10, `the upstream wrote ${closed.written! - 5} chunks after the client left (${(closed.at - abortedAt).toFixed(1)} ms)`);
  await waitForMetrics(proxy.metricsUrl, (x) => sumSamples(x, 'infermeter_requests_total', { outcome: 'client_abort' }) === aborts0 + 1);
  await agent.close();
});

test('a worker killed mid-stream: its streams are cut and counted once as worker_lost, the rest finish, the worker comes back', async () => {
  const s0 = (await scrape(proxy.metricsUrl)).samples;
  const total0 = sumSamples(s0, 'infermeter_requests_total');
  const ok0 = sumSamples(s0, 'infermeter_requests_total', { outcome: 'ok' });
  const agent = new Agent({ connections: 20 });
  // The streams pause after their first token until the worker has died: all in flight then.
  const results = Array.from({ length: 10 }, () => stream(agent, proxy.url, 40, 40, undefined, 'lost').then(() => 'done', () => 'cut'));
  // Every start has reached the metrics side (batches go every 20 ms), then one worker dies.
  await waitForMetrics(proxy.metricsUrl, (s) => sumSamples(s, 'infermeter_requests_in_flight') === 10, 15_000);
  const victim = liveWorkers()[0]!;
  const victimId = victim.id;
  victim.process.kill('SIGKILL');
  await once(victim, 'exit');
  upstream.release('lost');
  const outcomes = await Promise.all(results);
  const cut = outcomes.filter((o) => o === 'cut').length;
  assert.ok(cut >= 1 && cut <= 9, `streams cut: ${cut} of 10 (connections are dealt to both workers)`);
  const s = await waitForMetrics(proxy.metricsUrl, (x) => sumSamples(x, 'infermeter_requests_total') === total0 + 10 && sumSamples(x, 'infermeter_requests_in_flight') === 0, 5000);
  assert.equal(sumSamples(s, 'infermeter_requests_total', { outcome: 'worker_lost' }), cut);
  assert.equal(sumSamples(s, 'infermeter_requests_total', { outcome: 'ok' }) - ok0, 10 - cut);
  await agent.close();
  // A new worker takes the dead one's place, on the same port.
  const deadline = Date.now() + 5000;
  while (!(liveWorkers().length === 2 && liveWorkers().every((w) => w!.id !== victimId)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  assert.equal(liveWorkers().length, 2, 'the dead worker was replaced');
  const fresh = new Agent({ connections: 8 });
  const again = await Promise.all(Array.from({ length: 8 }, () => stream(fresh, proxy.url, 3, 1)));
  assert.ok(again.every((t) => t.includes('[DONE]')));
  await fresh.close();
  const later = await waitForMetrics(proxy.metricsUrl, (x) => sumSamples(x, 'infermeter_requests_total') === total0 + 18);
  assert.equal(sumSamples(later, 'infermeter_requests_total', { outcome: 'worker_lost' }), cut, 'nothing counted twice');
});

async function startCli(extra: string[]): Promise<{ child: ChildProcess; port: number; metricsPort: number }> {
  const child = spawn(process.execPath, [`${ROOT}dist/src/cli.js`, '--upstream', upstream.url, '--listen', '127.0.0.1:0', '--metrics-listen', '127.0.0.1:0', '--no-collector.gpu', '--no-collector.engine', '--no-collector.host', ...extra], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  for await (const c of child.stdout!) {
    out += (c as Buffer).toString();
    const m = /"proxy":"127\.0\.0\.1:(\d+)","metrics":"127\.0\.0\.1:(\d+)"/.exec(out);
    if (m) {
      child.stdout!.resume();
      return { child, port: Number(m[1]), metricsPort: Number(m[2]) };
    }
  }
  throw new Error(`infermeter did not start: ${out}`);
}

test('SIGTERM drains streams in flight on every worker, then the primary and its workers exit 0', async (t) => {
  const { child, port, metricsPort } = await startCli(['--workers', '2', '--shutdown-timeout', '10s']);
  // A failed assertion must not leave the daemon running (this process would wait on it forever).
  t.after(() => void (child.exitCode === null && child.signalCode === null && child.kill('SIGKILL')));
  const workers = processTree(child.pid!).slice(1);
  assert.equal(workers.length, 2);
  const agent = new Agent({ connections: 12 });
  const url = `http://127.0.0.1:${port}`;
  // The streams pause after their first token until the daemon is draining: in flight at SIGTERM
  // by construction, not because 900 ms outlasted the wait for the gauge.
  const pending = Array.from({ length: 12 }, () => stream(agent, url, 30, 30, undefined, 'drain'));
  await waitForMetrics(`http://127.0.0.1:${metricsPort}/metrics`, (s) => sumSamples(s, 'infermeter_requests_in_flight') === 12, 15_000);
  const cpu = workers.map((p) => cpuSeconds(p));
  assert.ok(cpu.every((c) => c > 0), 'both workers are running');
  child.kill('SIGTERM');
  for (const deadline = Date.now() + 15_000; ;) {
    const ready = await request(`http://127.0.0.1:${metricsPort}/readyz`).then(async (r) => `${r.statusCode} ${await r.body.text()}`, () => 'no answer');
    if (/^503 .*draining/.test(ready)) break;
    assert.ok(Date.now() < deadline, `not draining after SIGTERM: ${ready}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  upstream.release('drain');
  const texts = await Promise.all(pending);
  assert.ok(texts.every((t) => t.includes('tok29') && t.includes('[DONE]')), 'every stream finished whole');
  const [code] = (await once(child, 'exit')) as [number];
  assert.equal(code, 0);
  for (const pid of workers) assert.throws(() => process.kill(pid, 0), 'worker exited');
  await agent.close();
});
