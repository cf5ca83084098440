/**
 * Real engine, the prefix-cache model's `engine` figure (docs/prefix-cache.md): llama-server
 * through infermeter with --prefix-cache. A shared system prompt and a different question per
 * request, one at a time: the reuse infermeter reports the engine delivered is exactly what
 * llama-server's own counters say it reused over the same requests
 * (prompt_tokens_cached_total against prompt_tokens_total + cached), read from the usage
 * `prompt_tokens_details.cached_tokens` it sends; the traffic's reuse is above zero.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { parsePrometheusText } from '../../src/lib/prom-text.js';
import type { StatusDocument } from '../../src/exporters/ui/status-json.js';
import { startLlamaServer, startMeter, sum, waitFor, withLlama, type LlamaServer, type Meter } from './llama-harness.js';
import { body, send } from './workload-trace-helpers.js';

const SYSTEM = 'You are a careful assistant for a shipping company. Answer in one short sentence, never use lists or headings, and name the port when the question names one. '.repeat(3);
const REQUESTS = 24;

withLlama('prefix-cache model against llama-server: the engine\'s reuse is its own cached prompt tokens', (engine) => {
  let llama: LlamaServer;
  let meter: Meter;
  before(async () => {
    llama = await startLlamaServer(engine, { parallel: 1 });
    meter = await startMeter(llama.url, { prefixCache: 'true', hfHubCache: 'none' });
  });
  after(async () => {
    await meter?.close();
    await llama?.close();
  });

  test('engine ratio = llama-server\'s prompt_tokens_cached_total over all its prompt tokens, for the same requests', { timeout: 120_000 }, async () => {
    const counters = async () => {
      const s = parsePrometheusText(await (await fetch(`${llama.url}/metrics`)).text()).samples;
      return { cached: sum(s, 'llamacpp:prompt_tokens_cached_total'), fresh: sum(s, 'llamacpp:prompt_tokens_total') };
    };
    const before = await counters();
    let usageCached = 0;
    let usagePrompt = 0;
    for (let i = 0; i < REQUESTS; i++) {
      const r = await send(meter.url, 'chat', body('chat', 'tiny-llama', SYSTEM, `Question ${i}: when does the ferry number ${i * 7} leave the port of ${['Oslo', 'Bergen', 'Hull', 'Kiel'][i % 4]}?`, i % 2 === 0, 4));
      assert.equal(r.status, 200);
      usagePrompt += r.input;
    }
    const afterCounters = await counters();
    const cached = afterCounters.cached - before.cached;
    const all = cached + (afterCounters.fresh - before.fresh);
    assert.ok(cached > 0, 'the shared system prompt was reused');
    assert.equal(all, usagePrompt, 'llama-server\'s counters cover the prompt tokens its usage reported');
    const metricsBase = meter.metricsUrl.replace(/\/metrics$/, '');
    const row = await waitFor('the model\'s prefixCache row', async () => {
      const doc = (await (await fetch(`${metricsBase}/api/v1/status`)).json()) as StatusDocument;
      const u = doc.models.find((m) => m.model === 'tiny-llama')?.prefixCache?.upstreams[0];
      return u && u.requests === REQUESTS && u.engine !== null ? u : undefined;
    }, 20_000, 200);
    usageCached = Math.round(row.engine! * usagePrompt);
    console.log(`llama-server: cached ${cached} of ${all} prompt tokens (${(cached / all).toFixed(4)}); infermeter engine ${row.engine} (${row.engineFrom}), unbounded ${row.unbounded}`);
    assert.equal(row.engineFrom, 'usage');
    assert.ok(Math.abs(row.engine! - cached / all) < 1e-4, `infermeter's engine figure ${row.engine} against llama-server's own ${cached / all}`);
    assert.equal(usageCached, cached);
    assert.ok(row.unbounded! > 0.3, `the traffic's reuse: ${row.unbounded}`);
    const series = parsePrometheusText(await (await fetch(meter.metricsUrl)).text()).samples.filter((s) => s.name === 'infermeter_prefix_reuse_ratio');
    assert.ok(Math.abs(series.find((s) => s.labels['cache'] === 'engine')!.value - cached / all) < 1e-4);
    assert.equal(series.find((s) => s.labels['cache'] === 'engine_size'), undefined, 'llama-server reports no cache size: no engine-size figure');
  });
});
