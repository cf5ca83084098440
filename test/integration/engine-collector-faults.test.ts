/**
 * The engine collector against a fake engine over a real socket, through a real
 * CollectorRunner: up=1 on a good scrape, up=0 with the right error kind on each fault,
 * engine series removed while down (never stale values shown as current), and the other
 * collectors untouched.
 */
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Registry } from 'prom-client';
import { resolveConfig } from '../../src/config.js';
import { createLogger } from '../../src/lib/log.js';
import { parsePrometheusText, sumSamples, type Sample } from '../../src/lib/prom-text.js';
import { CollectorRunner } from '../../src/collectors/runner.js';
import { engineEntry } from '../../src/collectors/engine/collector.js';
import { ScrapeClient } from '../../src/collectors/engine/scrape.js';
import { hostEntry } from '../../src/collectors/host/collector.js';
import { CollectorError } from '../../src/collectors/types.js';
import { startFakeEngine, type FakeEngine, type FaultMode } from '../fakes/engine-metrics-server.js';

const fixture = (name: string) => readFileSync(new URL(`../../../test/fixtures/${name}`, import.meta.url), 'utf8');

let fake: FakeEngine;
let registry: Registry;
let runner: CollectorRunner;

before(async () => {
  fake = await startFakeEngine({ body: fixture('vllm-v0-metrics-0.10-cpu-full.prom'), slowMs: 5_000 });
  const config = resolveConfig(
    { upstream: 'http://127.0.0.1:9', engine: 'vllm', engineMetrics: fake.url, engineInterval: '0.25', hostInterval: '0.5' },
    {},
  );
  registry = new Registry();
  runner = new CollectorRunner(registry, config, createLogger('silent'));
  runner.start([engineEntry({ maxBytes: 1024 * 1024 }), hostEntry()]);
});

after(async () => {
  await runner.close();
  await fake.close();
});

async function samples(): Promise<Sample[]> {
  return parsePrometheusText(await registry.metrics()).samples;
}

async function waitFor(what: string, cond: (s: Sample[]) => boolean, ms = 8_000): Promise<Sample[]> {
  const until = Date.now() + ms;
  for (;;) {
    const s = await samples();
    if (cond(s)) return s;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const up = (s: Sample[], c: string) => s.find((x) => x.name === 'infermeter_collector_up' && x.labels['collector'] === c)?.value;
const errors = (s: Sample[], kind: string) => sumSamples(s, 'infermeter_collector_errors_total', { collector: 'engine', kind });
const engineSeries = (s: Sample[]) => s.filter((x) => x.name.startsWith('infermeter_engine_'));
const hostSeries = (s: Sample[]) => s.filter((x) => x.name.startsWith('infermeter_host_') || x.name.startsWith('infermeter_process_'));

test('a good scrape: up=1 and the normalized series', async () => {
  const s = await waitFor('engine up', (x) => up(x, 'engine') === 1 && up(x, 'host') === 1);
  assert.equal(sumSamples(s, 'infermeter_engine_prompt_tokens_total', { engine: 'vllm' }), 43952);
  assert.equal(sumSamples(s, 'infermeter_engine_time_to_first_token_seconds_count', { engine: 'vllm' }), 69);
  assert.equal(sumSamples(s, 'infermeter_engine_time_to_first_token_seconds_bucket', { engine: 'vllm', le: '2.5' }), 16);
});

const FAULTS: [FaultMode, string][] = [
  ['slow', 'timeout'],
  ['html', 'not_prometheus'],
  ['garbage', 'not_prometheus'],
  ['huge', 'too_large'],
  ['not_found', 'http_status'],
  ['down', 'unreachable'],
];

for (const [mode, kind] of FAULTS) {
  test(`engine ${mode}: up=0, errors_total{kind="${kind}"}, engine series removed, host untouched; then recovers`, async () => {
    const before = errors(await samples(), kind);
    await fake.setMode(mode);
    const s = await waitFor(`${kind} error`, (x) => up(x, 'engine') === 0 && errors(x, kind) > before);
    assert.deepEqual(engineSeries(s).map((x) => x.name), []);
    assert.equal(up(s, 'host'), 1);
    assert.ok(hostSeries(s).length >= 8, 'host and process series still exported');

    await fake.setMode('ok');
    const back = await waitFor('engine back up', (x) => up(x, 'engine') === 1 && engineSeries(x).length > 0);
    assert.equal(sumSamples(back, 'infermeter_engine_generation_tokens_total'), 4874);
  });
}

test('the default 20 MB limit stops reading a 50 MB body', async () => {
  const big = await startFakeEngine({ body: '' });
  await big.setMode('huge');
  const client = new ScrapeClient(big.url);
  try {
    await assert.rejects(client.fetch(AbortSignal.timeout(20_000)), (err: unknown) => err instanceof CollectorError && err.kind === 'too_large');
    await new Promise((r) => setTimeout(r, 100));
    assert.ok(big.hugeBytesSent < 40 * 1024 * 1024, `server wrote ${big.hugeBytesSent} bytes; the client should stop near 20 MB`);
  } finally {
    await client.close();
    await big.close();
  }
});

test('a declared Content-Length over the limit fails before reading the body', async () => {
  const fakeBig = await startFakeEngine({ body: 'x 1\n'.repeat(1000) });
  const client = new ScrapeClient(fakeBig.url, 100);
  try {
    await assert.rejects(client.fetch(AbortSignal.timeout(5_000)), (err: unknown) => err instanceof CollectorError && err.kind === 'too_large');
  } finally {
    await client.close();
    await fakeBig.close();
  }
});

test('a socket closed under a scrape is retried once on a fresh connection, not reported as a failure', async () => {
  const flaky = await startFakeEngine({ body: 'vllm:num_requests_running 3\n' });
  await flaky.setMode('drop_every_other');
  const client = new ScrapeClient(flaky.url);
  try {
    for (let i = 0; i < 4; i++) assert.equal(await client.fetch(AbortSignal.timeout(5_000)), 'vllm:num_requests_running 3\n');
  } finally {
    await client.close();
    await flaky.close();
  }
});
