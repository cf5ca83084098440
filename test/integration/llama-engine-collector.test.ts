/**
 * Real engine: the engine collector scrapes llama-server's own /metrics (`llamacpp:` names,
 * `--metrics`), and infermeter exports them as the normalized infermeter_engine_* series
 * with engine="llamacpp"; the gauges move when load is applied and settle when it stops, and
 * the token counters equal the server's own.
 *
 * The normalized names are asserted to be in the catalog (issue 29: this file used to skip,
 * even under CI, when they were missing).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { catalog } from '../../src/metrics/catalog.js';
import { parsePrometheusText } from '../../src/lib/prom-text.js';
import { startLlamaServer, startMeter, sum, waitFor, withLlama, type LlamaServer, type Meter } from './llama-harness.js';

const RUNNING = 'infermeter_engine_requests_running';
const WAITING = 'infermeter_engine_requests_waiting';
const GENERATED = 'infermeter_engine_generation_tokens_total';
const PROMPT = 'infermeter_engine_prompt_tokens_total';
const ENGINE = { engine: 'llamacpp' };

test('the normalized engine names this file reads are in the metric catalog', () => {
  const missing = [RUNNING, WAITING, GENERATED, PROMPT].filter((n) => !catalog().some((m) => m.name === n));
  assert.deepEqual(missing, []);
});

withLlama('the engine collector turns llama-server\'s llamacpp: metrics into infermeter_engine_* and they follow load', (engine) => {
  let llama: LlamaServer;
  let meter: Meter;
  before(async () => {
    llama = await startLlamaServer(engine, { parallel: 2 });
    meter = await startMeter(llama.url, { engineInterval: '250ms' });
  });
  after(async () => {
    await meter?.close();
    await llama?.close();
  });

  test('series exist with engine="llamacpp", the collector is up, and they follow load', async () => {
    const idle = await waitFor('a first engine scrape', async () => {
      const s = await meter.scrape();
      return sum(s, 'infermeter_collector_up', { collector: 'engine' }) === 1 && s.some((x) => x.name === RUNNING) ? s : undefined;
    });
    assert.equal(sum(idle, RUNNING, ENGINE), 0);
    assert.equal(sum(idle, WAITING, ENGINE), 0);
    const raw = parsePrometheusText(await (await fetch(`${llama.url}/metrics`)).text());
    assert.ok(raw.samples.some((s) => s.name.startsWith('llamacpp:')), 'the server exports llamacpp: names');

    // Three long generations on two slots: two run, one waits.
    const abort = new AbortController();
    const load = Array.from({ length: 3 }, (_, i) => fetch(`${meter.url}/v1/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, signal: abort.signal,
      body: JSON.stringify({ model: 'tiny-llama', prompt: `load ${i}`, stream: true, max_tokens: 900 }),
    }).then((r) => r.text()).catch(() => ''));
    const busy = await waitFor('running 2 / waiting 1 in infermeter_engine_*', async () => {
      const s = await meter.scrape();
      return sum(s, RUNNING, ENGINE) === 2 && sum(s, WAITING, ENGINE) === 1 ? s : undefined;
    }, 10_000, 50);
    assert.equal(sum(busy, RUNNING, ENGINE), 2);
    abort.abort();
    await Promise.all(load);
    await waitFor('the gauges to settle at 0', async () => {
      const s = await meter.scrape();
      return sum(s, RUNNING, ENGINE) === 0 && sum(s, WAITING, ENGINE) === 0 ? true : undefined;
    }, 10_000, 50);
  });

  test('token counters equal the server\'s own and grow by what a request generated', async () => {
    const serverCount = async (name: string) => sum(parsePrometheusText(await (await fetch(`${llama.url}/metrics`)).text()).samples, name);
    const caughtUp = (generated: number) => waitFor(`${GENERATED} = ${generated}`, async () => {
      const s = await meter.scrape();
      return sum(s, GENERATED, ENGINE) === generated ? s : undefined;
    }, 10_000, 50);
    const before = await serverCount('llamacpp:tokens_predicted_total');
    const s0 = await caughtUp(before);
    const res = await fetch(`${meter.url}/v1/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'tiny-llama', prompt: 'Count the tokens.', max_tokens: 32 }),
    });
    const usage = ((await res.json()) as { usage: { prompt_tokens: number; completion_tokens: number } }).usage;
    assert.equal(usage.completion_tokens, 32);
    assert.equal(await serverCount('llamacpp:tokens_predicted_total'), before + 32);
    const s1 = await caughtUp(before + 32);
    // llama.cpp counts processed and cache-reused prompt tokens apart; the normalized count adds them.
    assert.equal(sum(s1, PROMPT, ENGINE) - sum(s0, PROMPT, ENGINE), usage.prompt_tokens);
  });
});
