/**
 * Per-upstream TLS (README, "Several engines": each `upstreams:` entry has its own
 * upstreamCa/Cert/Key): two https upstreams, each with its own private CA and each requiring
 * a client certificate from that CA, behind one infermeter. Each model's requests reach the
 * upstream that lists it, relayed whole, and are labelled with their model and upstream (the
 * model lists are read over each upstream's own TLS too); the merged /v1/models has both.
 * An upstream given the other's trust would fail its handshake: neither CA signs the other.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.js';
import { makeCerts, type TestCerts } from '../fakes/certs.js';
import { InfermeterProcess } from '../fakes/infermeter-process.js';
import { eventually } from '../fakes/gpu.js';
import { rawPost, scrape, sumSamples } from '../helpers.js';

let certsA: TestCerts;
let certsB: TestCerts;
let a: FakeUpstream;
let b: FakeUpstream;
let meter: InfermeterProcess | null = null;

/** An https upstream that serves only clients with a certificate of its own CA. */
const mtls = (c: TestCerts) => ({ cert: c.pem(c.serverCert), key: c.pem(c.serverKey), ca: c.pem(c.caCert), requestCert: true, rejectUnauthorized: true });

before(async () => {
  certsA = makeCerts();
  certsB = makeCerts();
  a = await startFakeUpstream(0, '127.0.0.1', mtls(certsA), ['model-a']);
  b = await startFakeUpstream(0, '127.0.0.1', mtls(certsB), ['model-b']);
});
after(async () => {
  await meter?.stop();
  await a.close();
  await b.close();
  rmSync(certsA.dir, { recursive: true, force: true });
  rmSync(certsB.dir, { recursive: true, force: true });
});

test('two https upstreams with different CAs and client certificates: each model reaches its upstream over that upstream\'s TLS', { timeout: 60_000 }, async () => {
  const entry = (name: string, url: string, c: TestCerts) => `  - { name: ${name}, url: "${url}", upstreamCa: "${c.caCert}", upstreamCert: "${c.clientCert}", upstreamKey: "${c.clientKey}" }`;
  const config = join(certsA.dir, 'config.yaml');
  writeFileSync(config, ['upstreams:', entry('a', a.url, certsA), entry('b', b.url, certsB), ''].join('\n'));
  meter = new InfermeterProcess(['--config', config, '--listen', '127.0.0.1:0', '--metrics-listen', '127.0.0.1:0', '--no-collector.gpu', '--no-collector.engine', '--no-collector.host'], {});
  await meter.start();

  // The router reads both lists at start (up to 2 s before it listens); on a loaded machine give it longer.
  const listed = async () => ((await (await request(`${meter!.proxyUrl}/v1/models`)).body.json()) as { data: { id: string }[] }).data.map((m) => m.id);
  await eventually(async () => (await listed()).length === 2, 10_000, 'both model lists read').catch(() => undefined);
  assert.deepEqual(await listed(), ['model-a', 'model-b'], 'both lists read, each over its own TLS');

  for (const model of ['model-a', 'model-b', 'model-b', 'model-a']) {
    const r = await rawPost(`${meter.proxyUrl}/v1/chat/completions`, { model, stream: true, fake: { schedule: { firstMs: 5, chunks: 3, gapMs: 5 } } });
    assert.equal(r.status, 200, `${model}: ${r.body.toString()}`);
    assert.match(r.body.toString(), /tok2[\s\S]*\[DONE\]/);
  }
  const served = (u: FakeUpstream) => u.events.filter((e) => e.kind === 'request' && e.path === '/v1/chat/completions').map((e) => (JSON.parse(e.body!) as { model: string }).model);
  assert.deepEqual(served(a), ['model-a', 'model-a'], 'upstream a saw only its model');
  assert.deepEqual(served(b), ['model-b', 'model-b'], 'upstream b saw only its model');

  const ok = async (upstream: string, model: string) => sumSamples((await scrape(`${meter!.metricsUrl}/metrics`)).samples, 'infermeter_requests_total', { outcome: 'ok', upstream, gen_ai_request_model: model });
  const until = Date.now() + 10_000;
  // Records reach the metrics side in batches: wait for all four.
  while ((await ok('a', 'model-a')) + (await ok('b', 'model-b')) < 4 && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
  const text = (await scrape(`${meter.metricsUrl}/metrics`)).text;
  assert.equal(await ok('a', 'model-a'), 2, text.split('\n').filter((l) => l.startsWith('infermeter_requests_total')).join('\n') + JSON.stringify(meter.logs.filter((l) => l.level >= 40)));
  assert.equal(await ok('b', 'model-b'), 2, 'model-b labelled by its name: the metrics side read b\'s list over b\'s TLS');
  assert.equal(meter.logs.filter((l) => l.level >= 40 && /TLS|certificate|handshake/i.test(JSON.stringify(l))).length, 0, 'no TLS warning');
});
