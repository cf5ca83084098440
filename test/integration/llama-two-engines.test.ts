/**
 * Real engine: two llama-server processes serving different model names behind one
 * infermeter (config `upstreams:`, engine llamacpp). Each engine gets only its model's
 * requests (its own token counter agrees with infermeter's per upstream), its queue shows
 * under its own `upstream`, and the GPU join comes from the fake nvidia-smi naming the real
 * llama-server pids (auto attribution through /proc).
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { startLlamaServer, withLlama, type LlamaServer } from './llama-harness.js';
import { InfermeterProcess } from '../fakes/infermeter-process.js';
import { FAKE_NVIDIA_SMI } from '../fakes/gpu.js';
import { scrape, sumSamples } from '../helpers.js';
import type { Sample } from '../../src/lib/prom-text.js';

const servers: LlamaServer[] = [];
let meter: InfermeterProcess | null = null;
after(async () => {
  await meter?.stop();
  await Promise.all(servers.map((s) => s.close()));
});

withLlama('two llama-server engines with different model names behind one infermeter', (engine) => {
  test('two llama-server engines with different model names behind one infermeter', { timeout: 240_000 }, async () => {
    const a = await startLlamaServer(engine, { parallel: 1, extra: ['--alias', 'llama-a'] });
    servers.push(a);
    const b = await startLlamaServer(engine, { parallel: 2, extra: ['--alias', 'llama-b'] });
    servers.push(b);
    const dir = mkdtempSync(join(tmpdir(), 'infermeter-llama2-'));
    const config = join(dir, 'config.yaml');
    writeFileSync(config, `engine: llamacpp\nupstreams:\n  - { name: llama-a, url: "${a.url}" }\n  - { name: llama-b, url: "${b.url}" }\n`);
    meter = new InfermeterProcess(
      ['--config', config, '--listen', '127.0.0.1:0', '--metrics-listen', '127.0.0.1:0', '--no-collector.host', '--engine-interval', '250ms',
        '--nvidia-smi', FAKE_NVIDIA_SMI],
      { FAKE_NVIDIA_SMI_GPUS: '2', FAKE_NVIDIA_SMI_PERIOD_MS: '200', FAKE_NVIDIA_SMI_COMPUTE_APPS: `${a.proc.pid}:1,${b.proc.pid}:0` },
    );
    await meter.start();
    const metricsUrl = `${meter.metricsUrl}/metrics`;
    const client = new OpenAI({ baseURL: `${meter.proxyUrl}/v1`, apiKey: 'none', maxRetries: 0 });
    const listed = await client.models.list();
    assert.deepEqual(listed.data.map((m) => m.id), ['llama-a', 'llama-b']);

    // llama-a's eight requests are long enough that its queue (one slot) outlasts several engine
    // scrapes (250 ms) even on a fast machine: at 48 tokens each, CI ran the whole test in 3.4 s
    // and neither infermeter nor the test's own scrapes of the engine ever saw a request waiting.
    const ask = async (model: string) => {
      const max_tokens = model === 'llama-a' ? 320 : 48;
      const stream = await client.chat.completions.create({ model, stream: true, max_tokens, messages: [{ role: 'user', content: `hi ${model}` }] });
      let served = '';
      for await (const c of stream) served = c.model || served;
      return served;
    };
    let done = false;
    const all = Promise.all([...Array.from({ length: 8 }, () => ask('llama-a')), ...Array.from({ length: 4 }, () => ask('llama-b'))]).finally(() => (done = true));
    const peak = { aWaitingMeter: 0, aWaitingEngine: 0, bWaitingMeter: 0, bWaitingEngine: 0 };
    while (!done) {
      const [m, ea, eb] = await Promise.all([scrape(metricsUrl), scrape(`${a.url}/metrics`), scrape(`${b.url}/metrics`)]);
      peak.aWaitingMeter = Math.max(peak.aWaitingMeter, sumSamples(m.samples, 'infermeter_engine_requests_waiting', { upstream: 'llama-a' }));
      peak.bWaitingMeter = Math.max(peak.bWaitingMeter, sumSamples(m.samples, 'infermeter_engine_requests_waiting', { upstream: 'llama-b' }));
      peak.aWaitingEngine = Math.max(peak.aWaitingEngine, sumSamples(ea.samples, 'llamacpp:requests_deferred'));
      peak.bWaitingEngine = Math.max(peak.bWaitingEngine, sumSamples(eb.samples, 'llamacpp:requests_deferred'));
      await new Promise((r) => setTimeout(r, 100));
    }
    const served = await all;
    assert.deepEqual(served, [...Array(8).fill('llama-a'), ...Array(4).fill('llama-b')]);

    // Each engine's own output-token counter equals infermeter's for that upstream: nothing crossed.
    let samples: Sample[] = [];
    const until = Date.now() + 8000;
    const engineTokens = async (s: LlamaServer) => sumSamples((await scrape(`${s.url}/metrics`)).samples, 'llamacpp:tokens_predicted_total');
    const [tokA, tokB] = [await engineTokens(a), await engineTokens(b)];
    const out = (upstream: string) => sumSamples(samples, 'infermeter_tokens_total', { upstream, gen_ai_token_type: 'output' });
    do {
      samples = (await scrape(metricsUrl)).samples;
      // Both engines' collectors up at the same read: a scrape of a busy llama-server can miss its 250 ms turn once, and the next one counts.
      const up = (upstream: string) => sumSamples(samples, 'infermeter_collector_up', { collector: 'engine', upstream });
      if (sumSamples(samples, 'infermeter_requests_total', { route: 'chat_completions' }) === 12 && samples.some((s) => s.name === 'infermeter_gpu_engine_info') && up('llama-a') === 1 && up('llama-b') === 1) break;
      await new Promise((r) => setTimeout(r, 100));
    } while (Date.now() < until);
    const ok = (upstream: string, model: string) => sumSamples(samples, 'infermeter_requests_total', { upstream, gen_ai_request_model: model, outcome: 'ok' });
    assert.equal(ok('llama-a', 'llama-a'), 8);
    assert.ok(peak.aWaitingMeter > 0, `llama-a's queue (--parallel 1) shows under its upstream (engine said up to ${peak.aWaitingEngine})`);
    assert.equal(ok('llama-b', 'llama-b'), 4);
    assert.equal(out('llama-a'), tokA, 'llama-a: infermeter output tokens = the engine\'s tokens_predicted_total');
    assert.equal(out('llama-b'), tokB, 'llama-b: infermeter output tokens = the engine\'s tokens_predicted_total');
    assert.equal(sumSamples(samples, 'infermeter_collector_up', { collector: 'engine', upstream: 'llama-a' }), 1);
    assert.equal(sumSamples(samples, 'infermeter_collector_up', { collector: 'engine', upstream: 'llama-b' }), 1);
    const joined = samples.filter((s) => s.name === 'infermeter_gpu_engine_info').map((s) => `${s.labels['gpu']}:${s.labels['upstream']}`).sort();
    assert.deepEqual(joined, ['0:llama-b', '1:llama-a'], 'the GPU join ties each GPU to the llama-server process holding it');
    console.log(JSON.stringify({
      figures: 'two llama-server engines (a: --parallel 1, 8 requests, max_tokens 320; b: --parallel 2, 4 requests, max_tokens 48)',
      a: { requestsInfermeter: ok('llama-a', 'llama-a'), outputTokensInfermeter: out('llama-a'), tokensPredictedEngine: tokA, peakWaitingInfermeter: peak.aWaitingMeter, peakDeferredEngine: peak.aWaitingEngine },
      b: { requestsInfermeter: ok('llama-b', 'llama-b'), outputTokensInfermeter: out('llama-b'), tokensPredictedEngine: tokB, peakWaitingInfermeter: peak.bWaitingMeter, peakDeferredEngine: peak.bWaitingEngine },
    }));
  });
});
