/**
 * A reload (SIGHUP) of a daemon whose config file lists `upstreams:`: the model labels are the
 * union of every upstream's /v1/models before and after it (README, "Several engines"). A
 * model only the second upstream serves keeps its label across a reload that changes the live
 * settings, goes to `other` under a reloaded allowlist that leaves it out, and gets its label
 * back when a reload drops the allowlist; its requests reach the second upstream throughout,
 * and an unchanged list is not named as needing a restart.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.js';
import { InfermeterProcess } from '../fakes/infermeter-process.js';
import { eventually } from '../fakes/gpu.js';
import { rawPost, scrape, sumSamples } from '../helpers.js';

let a: FakeUpstream;
let b: FakeUpstream;
let dir: string;
let meter: InfermeterProcess | null = null;

before(async () => {
  a = await startFakeUpstream(0, '127.0.0.1', undefined, ['model-a']);
  b = await startFakeUpstream(0, '127.0.0.1', undefined, ['model-b']);
  dir = mkdtempSync(join(tmpdir(), 'infermeter-upstreams-reload-'));
});
after(async () => {
  await meter?.stop();
  await a.close();
  await b.close();
  rmSync(dir, { recursive: true, force: true });
});

test('a reload with upstreams: a model only the second upstream lists keeps, loses (allowlist) and gets back its label', { timeout: 90_000 }, async () => {
  const config = join(dir, 'config.yaml');
  const write = (head: string[]) => writeFileSync(config, [...head, 'upstreams:', `  - { name: a, url: "${a.url}" }`, `  - { name: b, url: "${b.url}" }`, ''].join('\n'));
  write(['modelsRefresh: 60s']);
  meter = new InfermeterProcess(['--config', config, '--listen', '127.0.0.1:0', '--metrics-listen', '127.0.0.1:0', '--no-collector.gpu', '--no-collector.engine', '--no-collector.host'], {});
  await meter.start();
  const m = meter;

  const ask = async (model: string) => {
    const r = await rawPost(`${m.proxyUrl}/v1/chat/completions`, { model, stream: true, fake: { schedule: { firstMs: 2, chunks: 2, gapMs: 2 } } });
    assert.equal(r.status, 200, r.body.toString());
  };
  const okAs = async (label: string) => sumSamples((await scrape(`${m.metricsUrl}/metrics`)).samples, 'infermeter_requests_total', { route: 'chat_completions', outcome: 'ok', upstream: 'b', gen_ai_request_model: label });
  const reloaded = async (n: number) => {
    m.signal('SIGHUP');
    await eventually(() => m.logsMatching('config reloaded').length === n, 10_000, `reload ${n} applied`);
  };
  /** Asks for model-b until one more request carries `label` (the label set may follow a reload by one list read). */
  const labelled = async (label: string) => {
    const before = await okAs(label);
    await eventually(async () => {
      await ask('model-b');
      return (await okAs(label)) > before;
    }, 10_000, `model-b labelled ${label}`, 200);
  };

  // The router reads both lists at start (up to 2 s before it listens); on a loaded machine give it longer.
  await eventually(async () => ((await (await request(`${m.proxyUrl}/v1/models`)).body.json()) as { data: unknown[] }).data.length === 2, 10_000, 'both model lists read');
  await labelled('model-b');

  // A reload that changes a live setting only (the refresh interval): the list is read again, both upstreams.
  write(['modelsRefresh: 30s']);
  await reloaded(1);
  await labelled('model-b');

  // An allowlist without model-b: its requests are `other`, and still go to upstream b.
  write(['modelsRefresh: 30s', 'models: [model-a]']);
  await reloaded(2);
  await labelled('other');

  // The allowlist dropped: the labels are every upstream's lists again.
  write(['modelsRefresh: 30s']);
  await reloaded(3);
  await labelled('model-b');

  const served = b.events.filter((e) => e.kind === 'request' && e.path === '/v1/chat/completions').map((e) => (JSON.parse(e.body!) as { model: string }).model);
  assert.ok(served.length >= 4 && served.every((x) => x === 'model-b'), `upstream b served model-b only: ${served.join(', ')}`);
  assert.equal(a.events.filter((e) => e.kind === 'request' && e.path === '/v1/chat/completions').length, 0, 'upstream a served none of it');
  const restart = m.logs.filter((l) => Array.isArray(l['settings']) && (l['settings'] as string[]).includes('upstreams'));
  assert.deepEqual(restart, [], 'the unchanged upstreams: list is not named as needing a restart');
});
