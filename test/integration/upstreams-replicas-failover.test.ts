// test-group: alone (requests spread by requests in flight)
/**
 * Two simulators serving the same model (replicas) behind one infermeter: requests spread by
 * requests in flight; stopping one engine sends new requests to the other; the requests in
 * flight on the stopped one each end once, as a failure, and nothing is counted twice.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { spawnSimulator, type SimulatorProcess } from '../../src/sim/child.js';
import { InfermeterProcess } from '../fakes/infermeter-process.js';
import { scrape, sumSamples } from '../helpers.js';
import type { Sample } from '../../src/lib/prom-text.js';

const sims: SimulatorProcess[] = [];
let meter: InfermeterProcess | null = null;
after(async () => {
  await meter?.stop();
  await Promise.all(sims.map((s) => s.close()));
});

/** A streamed chat request read to its end; resolves with the status and whether the stream finished ([DONE]). */
async function chat(proxyUrl: string, maxTokens: number): Promise<{ status: number; complete: boolean }> {
  try {
    const res = await request(`${proxyUrl}/v1/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'shared-model', stream: true, max_tokens: maxTokens, messages: [{ role: 'user', content: 'hi' }] }),
    });
    const text = await res.body.text();
    return { status: res.statusCode, complete: text.includes('[DONE]') };
  } catch {
    return { status: -1, complete: false }; // the stream was cut
  }
}

test('replicas: spread by in-flight count; a stopped engine\'s streams end once as failures, new requests go to the other, nothing counted twice', async () => {
  const args = ['--listen', '127.0.0.1:0', '--models', 'shared-model', '--speed', '2', '--output-tokens', '250-300'];
  const a = await spawnSimulator([...args, '--seed', '1']);
  const b = await spawnSimulator([...args, '--seed', '2']);
  sims.push(a, b);
  const dir = mkdtempSync(join(tmpdir(), 'infermeter-replicas-'));
  const config = join(dir, 'config.yaml');
  writeFileSync(config, `upstreams:\n  - { name: replica-a, url: "${a.url}" }\n  - { name: replica-b, url: "${b.url}" }\n`);
  meter = new InfermeterProcess(
    ['--config', config, '--listen', '127.0.0.1:0', '--metrics-listen', '127.0.0.1:0', '--no-collector.gpu', '--no-collector.host', '--engine-interval', '500ms'],
    {},
  );
  await meter.start();
  const metricsUrl = `${meter.metricsUrl}/metrics`;

  // 8 long streams at once: fewest in flight puts 4 on each replica.
  const long = Array.from({ length: 8 }, () => chat(meter!.proxyUrl, 250));
  const running = async (sim: SimulatorProcess) => sumSamples((await scrape(`${sim.url}/metrics`)).samples, 'vllm:num_requests_running');
  const until = Date.now() + 10_000;
  let spread = [0, 0];
  while (Date.now() < until) {
    spread = [await running(a), await running(b)];
    if (spread[0]! + spread[1]! === 8) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.deepEqual(spread, [4, 4], 'each replica runs half of the streams');

  // Stop replica b (its streams are cut), then send more: all of them go to a and succeed.
  b.child.kill('SIGKILL');
  await new Promise((r) => b.child.once('exit', r));
  const after8 = Array.from({ length: 6 }, () => chat(meter!.proxyUrl, 5));
  const late = await Promise.all(after8);
  assert.deepEqual(late.map((r) => r.status), Array(6).fill(200), 'new requests are answered by the surviving replica');
  assert.ok(late.every((r) => r.complete));
  const first = await Promise.all(long);
  const cut = first.filter((r) => !r.complete).length;
  assert.equal(cut, 4, 'the 4 streams on the stopped replica were cut, the other 4 finished');

  let samples: Sample[] = [];
  const deadline = Date.now() + 8000;
  do {
    samples = (await scrape(metricsUrl)).samples;
    if (sumSamples(samples, 'infermeter_requests_total', { route: 'chat_completions' }) >= 14) break;
    await new Promise((r) => setTimeout(r, 50));
  } while (Date.now() < deadline);
  const n = (labels: Record<string, string>) => sumSamples(samples, 'infermeter_requests_total', { route: 'chat_completions', ...labels });
  assert.equal(n({}), 14, 'one record per request: 8 + 6, none twice');
  assert.equal(n({ upstream: 'replica-a', outcome: 'ok' }), 4 + 6);
  assert.equal(n({ upstream: 'replica-b', outcome: 'ok' }), 0);
  const failedOnB = samples.filter((s) => s.name === 'infermeter_requests_total' && s.labels['upstream'] === 'replica-b' && s.labels['outcome'] !== 'ok');
  assert.equal(failedOnB.reduce((t, s) => t + s.value, 0), 4, 'each cut stream ended once, on the replica it was on');
  assert.deepEqual([...new Set(failedOnB.map((s) => s.labels['outcome']))], ['stream_error'], 'a stream cut after its headers is a stream_error (DESIGN.md outcomes)');
  // The surviving engine's own count agrees.
  const servedByA = sumSamples((await scrape(`${a.url}/metrics`)).samples, 'vllm:request_success_total');
  assert.equal(servedByA, 10);
  // The engine collector's next scrape of the stopped replica fails (an event, awaited; not 1.2 s).
  const healthBy = Date.now() + 10_000;
  do {
    samples = (await scrape(metricsUrl)).samples;
    if (sumSamples(samples, 'infermeter_collector_up', { collector: 'engine', upstream: 'replica-b' }) === 0) break;
    await new Promise((r) => setTimeout(r, 50));
  } while (Date.now() < healthBy);
  assert.equal(sumSamples(samples, 'infermeter_collector_up', { collector: 'engine', upstream: 'replica-a' }), 1);
  assert.equal(sumSamples(samples, 'infermeter_collector_up', { collector: 'engine', upstream: 'replica-b' }), 0, 'the stopped engine\'s health is its own');
  console.log(JSON.stringify({ figures: 'replicas', spreadWhileRunning: spread, cutOnStopped: cut, okOnA: n({ upstream: 'replica-a', outcome: 'ok' }), servedByEngineA: servedByA }));
});
