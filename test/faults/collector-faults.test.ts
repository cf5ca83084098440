/**
 * Collector faults while traffic flows: nvidia-smi killed repeatedly, hanging, printing
 * garbage; the engine's /metrics slow, huge (50 MB) or garbage. The proxy's figures stay
 * exact and /metrics keeps rendering.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { Agent, request } from 'undici';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.js';
import { startFakeEngine, type FakeEngine, type FaultMode } from '../fakes/engine-metrics-server.js';
import { FIXTURES, ROOT, sumSamples } from '../helpers.js';
import { parsePrometheusText } from '../../src/lib/prom-text.js';
import { report, rss, startInfermeterProcess, totalRequests } from './harness.js';

let upstream: FakeUpstream;
let engine: FakeEngine;
before(async () => {
  upstream = await startFakeUpstream();
  engine = await startFakeEngine({ body: readFileSync(`${FIXTURES}vllm-v1-metrics-head40.prom`, 'utf8'), slowMs: 3000 });
});
after(async () => {
  await engine.close();
  await upstream.close();
});

/** Child processes of `pid` (all threads), e.g. its nvidia-smi. */
function children(pid: number): number[] {
  const out: number[] = [];
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    const text = readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim();
    if (text) out.push(...text.split(/\s+/).map(Number));
  }
  return out;
}

const REQUESTS = 200;
const CHUNKS = 10;

async function scenario(name: string, gpuFault: 'kill' | 'hang' | 'garbage', engineMode: FaultMode): Promise<void> {
  await engine.setMode('ok');
  const env = gpuFault === 'kill' ? {} : { FAKE_NVIDIA_SMI_FAULT: gpuFault, FAKE_NVIDIA_SMI_FAULT_AFTER: '1' };
  Object.assign(process.env, { FAKE_NVIDIA_SMI_FAULT: env.FAKE_NVIDIA_SMI_FAULT ?? 'none', FAKE_NVIDIA_SMI_FAULT_AFTER: env.FAKE_NVIDIA_SMI_FAULT_AFTER ?? '3', FAKE_NVIDIA_SMI_PERIOD_MS: '250' });
  const im = await startInfermeterProcess(upstream.url, ['--nvidia-smi', `${ROOT}bin/fake-nvidia-smi`, '--gpu-interval', '1s', '--engine-metrics', `${engine.url}/metrics`, '--engine-interval', '500ms', '--no-collector.host'], true);
  let anomalies = 0;
  let peak = rss(im.pid);
  const gpuUp: number[] = [];
  let scrapes = 0;
  let stop = false;
  // Keep /metrics under watch the whole time: it must always render.
  const watcher = (async () => {
    while (!stop) {
      const res = await request(im.metricsUrl);
      const text = await res.body.text();
      scrapes++;
      if (res.statusCode !== 200) anomalies++;
      const s = parsePrometheusText(text).samples;
      gpuUp.push(sumSamples(s, 'infermeter_collector_up', { collector: 'gpu' }));
      peak = Math.max(peak, rss(im.pid));
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  const killer = (async () => {
    while (!stop && gpuFault === 'kill') {
      for (const c of children(im.pid)) process.kill(c, 'SIGKILL');
      await new Promise((r) => setTimeout(r, 300));
    }
  })();
  try {
    await new Promise((r) => setTimeout(r, 700));
    await engine.setMode(engineMode);
    const agent = new Agent({ connections: 10 });
    let next = 0;
    let bytes = 0;
    await Promise.all(
      Array.from({ length: 10 }, async () => {
        while (next < REQUESTS) {
          next++;
          const res = await request(`${im.url}/v1/chat/completions`, { method: 'POST', dispatcher: agent, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'fake-model', stream: true, fake: { schedule: { firstMs: 5, chunks: CHUNKS, gapMs: 3, usage: CHUNKS } } }) });
          const text = await res.body.text();
          bytes += text.length;
          if (res.statusCode !== 200 || !text.includes(`tok${CHUNKS - 1} `) || !text.endsWith('data: [DONE]\n\n')) anomalies++;
        }
      }),
    );
    await agent.close();
    const counted = await totalRequests(im.metricsUrl, 5000, REQUESTS);
    const s = parsePrometheusText(await (await request(im.metricsUrl)).body.text()).samples;
    if (counted !== REQUESTS) anomalies++;
    if (sumSamples(s, 'infermeter_tokens_total', { gen_ai_token_type: 'output' }) !== REQUESTS * CHUNKS) anomalies++;
    if (sumSamples(s, 'gen_ai_server_time_to_first_token_seconds_count') !== REQUESTS) anomalies++;
    // The faults must really have happened: wait (bounded) for each one's evidence.
    const evidence = (x: typeof s) => {
      const engineErrors = sumSamples(x, 'infermeter_collector_errors_total', { collector: 'engine' }) > 0;
      const restarts = sumSamples(x, 'infermeter_gpu_dmon_restarts_total');
      const invalid = sumSamples(x, 'infermeter_gpu_dmon_invalid_lines_total');
      const upThenDown = gpuUp.indexOf(1) >= 0 && gpuUp.slice(gpuUp.indexOf(1)).includes(0);
      const gpu = gpuFault === 'kill' ? restarts >= 2 : gpuFault === 'hang' ? upThenDown : invalid > 0 && gpuUp.at(-1) === 1;
      return engineErrors && gpu;
    };
    let latest = s;
    for (let i = 0; i < 100 && !evidence(latest); i++) {
      await new Promise((r) => setTimeout(r, 200));
      latest = parsePrometheusText(await (await request(im.metricsUrl)).body.text()).samples;
    }
    stop = true;
    await watcher;
    await killer;
    report({ scenario: `collectors: ${name} (${scrapes} /metrics scrapes)`, requests: REQUESTS, bytesCompared: bytes, anomalies, peakRssMiB: Math.round(peak / 2 ** 20), fdsBefore: 0, fdsAfter: 0 });
    assert.equal(anomalies, 0);
    assert.ok(evidence(latest), `the faults took effect (gpu up history ${gpuUp.join('')})`);
  } finally {
    stop = true;
    await im.stop();
  }
}

test('nvidia-smi killed repeatedly, engine /metrics slow', () => scenario('nvidia-smi killed repeatedly + engine slow', 'kill', 'slow'));
test('nvidia-smi hanging, engine /metrics 50 MB', () => scenario('nvidia-smi hang + engine 50 MB', 'hang', 'huge'));
test('nvidia-smi printing garbage, engine /metrics garbage', () => scenario('nvidia-smi garbage + engine garbage', 'garbage', 'garbage'));
