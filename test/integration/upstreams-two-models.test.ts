/**
 * Two simulators serving different models behind one infermeter (config `upstreams:`),
 * under concurrent load: each engine serves only its model's requests; the engine series
 * of each upstream show that engine's own queue and KV state; the GPU join series is what
 * `gpus:` says; GPU series are not duplicated; /v1/models through the proxy merges both lists.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import OpenAI from 'openai';
import { spawnSimulator, type SimulatorProcess } from '../../src/sim/child.js';
import { InfermeterProcess } from '../fakes/infermeter-process.js';
import { FAKE_NVIDIA_SMI } from '../fakes/gpu.js';
import { scrape, sumSamples } from '../helpers.js';
import type { Sample } from '../../src/lib/prom-text.js';

const sims: SimulatorProcess[] = [];
let meter: InfermeterProcess | null = null;
after(async () => {
  await meter?.stop();
  await Promise.all(sims.map((s) => s.close()));
});

const pick = (samples: Sample[], name: string, labels: Record<string, string> = {}) =>
  samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));

test('two engines with different models behind one infermeter: routing, engine series per upstream, GPU join, no duplicate GPU series, merged /v1/models', async () => {
  // A: two sequences at a time, so its queue fills; B: room for every request it gets.
  const a = await spawnSimulator(['--listen', '127.0.0.1:0', '--models', 'model-a', '--speed', '2', '--max-num-seqs', '2', '--output-tokens', '40-60', '--seed', '1']);
  const b = await spawnSimulator(['--listen', '127.0.0.1:0', '--models', 'model-b', '--speed', '2', '--max-num-seqs', '64', '--output-tokens', '300-400', '--seed', '2']);
  sims.push(a, b);
  const dir = mkdtempSync(join(tmpdir(), 'infermeter-upstreams-'));
  const config = join(dir, 'config.yaml');
  writeFileSync(config, [
    'upstreams:',
    `  - { name: engine-a, url: "${a.url}", gpus: [0, 1] }`,
    `  - { name: engine-b, url: "${b.url}", gpus: [2] }`,
    '',
  ].join('\n'));
  meter = new InfermeterProcess(
    ['--config', config, '--listen', '127.0.0.1:0', '--metrics-listen', '127.0.0.1:0', '--no-collector.host', '--engine-interval', '500ms',
      '--nvidia-smi', FAKE_NVIDIA_SMI, '--gpu-interval', '1s'],
    { FAKE_NVIDIA_SMI_GPUS: '3', FAKE_NVIDIA_SMI_PERIOD_MS: '100' },
  );
  await meter.start();
  const metricsUrl = `${meter.metricsUrl}/metrics`;

  const models = (await (await request(`${meter.proxyUrl}/v1/models`)).body.json()) as { data: { id: string }[] };
  assert.deepEqual(models.data.map((m) => m.id), ['model-a', 'model-b'], 'merged list, first upstream first');

  const client = new OpenAI({ baseURL: `${meter.proxyUrl}/v1`, apiKey: 'none', maxRetries: 0 });
  const ask = async (model: string, maxTokens: number) => {
    const stream = await client.chat.completions.create({ model, stream: true, max_tokens: maxTokens, messages: [{ role: 'user', content: `hello ${model}` }] });
    let served = '';
    for await (const c of stream) served = c.model || served;
    return served;
  };
  const load = [...Array.from({ length: 16 }, () => ask('model-a', 30)), ...Array.from({ length: 8 }, () => ask('model-b', 250))];

  // While loaded: each upstream's engine series are that engine's own (A queues, B does not).
  // An engine admits a request at its next step (vLLM too), so one that arrived during a step
  // waits until that step ends, and a scrape can catch it: B, with room for all, can show one
  // waiting while its 8 requests still arrive. Compared like with like: once B's series (one
  // scrape of B) show all 8 running, B has nothing left to admit, and from then on its series
  // must show nothing waiting; and never more requests than the 8 it was sent.
  let done = false;
  const all = Promise.all(load).finally(() => (done = true));
  const peak = { aWaiting: 0, simAWaitingThen: 0, aRunning: 0, bWaiting: 0, bWaitingAfterAllRunning: 0, bHeld: 0, bRunning: 0, simAWaiting: 0, simBRunning: 0 };
  let bAllRunning = false;
  while (!done) {
    const [{ samples }, simA, simB] = await Promise.all([scrape(metricsUrl), scrape(`${a.url}/metrics`), scrape(`${b.url}/metrics`)]);
    peak.simAWaiting = Math.max(peak.simAWaiting, sumSamples(simA.samples, 'vllm:num_requests_waiting'));
    peak.simBRunning = Math.max(peak.simBRunning, sumSamples(simB.samples, 'vllm:num_requests_running'));
    const v = (name: string, upstream: string) => sumSamples(samples, name, { upstream });
    const aWaiting = v('infermeter_engine_requests_waiting', 'engine-a');
    if (aWaiting > peak.aWaiting) {
      peak.aWaiting = aWaiting;
      peak.simAWaitingThen = sumSamples(simA.samples, 'vllm:num_requests_waiting');
    }
    peak.aRunning = Math.max(peak.aRunning, v('infermeter_engine_requests_running', 'engine-a'));
    const [bWaiting, bRunning] = [v('infermeter_engine_requests_waiting', 'engine-b'), v('infermeter_engine_requests_running', 'engine-b')];
    if (bRunning === 8) bAllRunning = true;
    peak.bWaiting = Math.max(peak.bWaiting, bWaiting);
    if (bAllRunning) peak.bWaitingAfterAllRunning = Math.max(peak.bWaitingAfterAllRunning, bWaiting);
    peak.bHeld = Math.max(peak.bHeld, bWaiting + bRunning);
    peak.bRunning = Math.max(peak.bRunning, bRunning);
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.ok(peak.aWaiting >= 4, `engine-a's series show its queue (peak ${peak.aWaiting} waiting; the engine said ${peak.simAWaitingThen} then, ${peak.simAWaiting} at most)`);
  assert.equal(peak.aRunning, 2, 'engine-a runs at most its 2 sequences');
  assert.ok(bAllRunning, `engine-b's series show its own running requests, all 8 at once (peak ${peak.bRunning})`);
  assert.equal(peak.bWaitingAfterAllRunning, 0, `engine-b, with room for all, queues nothing once all 8 run (peak ${peak.bWaiting} waiting while they arrived)`);
  assert.ok(peak.bHeld <= 8, `engine-b's series hold only engine-b's 8 requests (peak ${peak.bHeld} running + waiting)`);

  const served = await all;
  assert.deepEqual(served.slice(0, 16), Array(16).fill('model-a'));
  assert.deepEqual(served.slice(16), Array(8).fill('model-b'));

  // Each engine served only its own model's requests, by its own count.
  const simA = (await scrape(`${a.url}/metrics`)).samples;
  const simB = (await scrape(`${b.url}/metrics`)).samples;
  assert.equal(sumSamples(simA, 'vllm:request_success_total'), 16);
  assert.equal(sumSamples(simB, 'vllm:request_success_total'), 8);
  let samples: Sample[] = [];
  const until = Date.now() + 5000;
  do {
    samples = (await scrape(metricsUrl)).samples;
    if (sumSamples(samples, 'infermeter_requests_total', { route: 'chat_completions' }) === 24) break;
    await new Promise((r) => setTimeout(r, 50));
  } while (Date.now() < until);
  const okOn = (upstream: string, model: string) =>
    sumSamples(samples, 'infermeter_requests_total', { route: 'chat_completions', outcome: 'ok', upstream, gen_ai_request_model: model });
  assert.equal(okOn('engine-a', 'model-a'), 16);
  assert.equal(okOn('engine-b', 'model-b'), 8);
  assert.equal(okOn('engine-a', 'model-b') + okOn('engine-b', 'model-a'), 0, 'no request crossed to the other engine');
  assert.ok(pick(samples, 'infermeter_engine_kv_cache_usage_ratio', { upstream: 'engine-a' }).length === 1);
  assert.ok(pick(samples, 'infermeter_engine_kv_cache_usage_ratio', { upstream: 'engine-b' }).length === 1);
  assert.equal(sumSamples(samples, 'infermeter_collector_up', { collector: 'engine', upstream: 'engine-a' }), 1);
  assert.equal(sumSamples(samples, 'infermeter_collector_up', { collector: 'engine', upstream: 'engine-b' }), 1);

  // The join series is exactly what gpus: says, with the GPUs' own UUIDs.
  const uuids = new Map(pick(samples, 'infermeter_gpu_info').map((s) => [s.labels['gpu'], s.labels['uuid']]));
  assert.equal(uuids.size, 3);
  const joined = pick(samples, 'infermeter_gpu_engine_info').map((s) => `${s.labels['gpu']}/${s.labels['uuid']}/${s.labels['upstream']}=${s.value}`).sort();
  assert.deepEqual(joined, [`0/${uuids.get('0')}/engine-a=1`, `1/${uuids.get('1')}/engine-a=1`, `2/${uuids.get('2')}/engine-b=1`]);

  // Each GPU series once per GPU, whatever the number of engines.
  const gpuSeries = samples.filter((s) => s.name.startsWith('infermeter_gpu_') && s.labels['gpu'] !== undefined && s.name !== 'infermeter_gpu_engine_info');
  assert.ok(gpuSeries.length > 0);
  const seen = new Map<string, number>();
  for (const s of gpuSeries) seen.set(`${s.name}{gpu=${s.labels['gpu']}}`, (seen.get(`${s.name}{gpu=${s.labels['gpu']}}`) ?? 0) + 1);
  assert.deepEqual([...seen.entries()].filter(([, n]) => n > 1), []);
  assert.equal(pick(samples, 'infermeter_gpu_sm_utilization_ratio').length, 3);

  // The status page lists each GPU under the engine it serves.
  const status = (await (await request(`${meter.metricsUrl}/api/v1/status`)).body.json()) as { gpus: { gpu: string; upstreams?: string[] }[] };
  assert.deepEqual(status.gpus.map((g) => [g.gpu, g.upstreams]), [['0', ['engine-a']], ['1', ['engine-a']], ['2', ['engine-b']]]);

  console.log(JSON.stringify({
    figures: 'two engines, 16 requests to model-a (max 2 running), 8 to model-b',
    engineA: { servedByEngine: sumSamples(simA, 'vllm:request_success_total'), servedByInfermeter: okOn('engine-a', 'model-a'), peakWaitingInfermeter: peak.aWaiting, peakWaitingEngine: peak.simAWaiting, peakRunningInfermeter: peak.aRunning },
    engineB: { servedByEngine: sumSamples(simB, 'vllm:request_success_total'), servedByInfermeter: okOn('engine-b', 'model-b'), peakWaitingInfermeter: peak.bWaiting, peakWaitingAfterAllRunning: peak.bWaitingAfterAllRunning, peakRunningInfermeter: peak.bRunning, peakRunningEngine: peak.simBRunning },
  }));
});
