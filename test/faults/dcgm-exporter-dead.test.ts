/**
 * dcgm-exporter dying while traffic flows: infermeter (its own process) scrapes a fake
 * dcgm-exporter that is closed mid-run. The GPU collector goes down (up 1 then 0, series
 * gone); every streamed request still arrives whole and is counted exactly.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Agent, request } from 'undici';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.js';
import { startFakeDcgmExporter } from '../fakes/dcgm-exporter.js';
import { FIXTURES, sumSamples } from '../helpers.js';
import { parsePrometheusText } from '../../src/lib/prom-text.js';
import { startInfermeterProcess, totalRequests } from './harness.js';

let upstream: FakeUpstream;
before(async () => {
  upstream = await startFakeUpstream();
});
after(async () => {
  await upstream.close();
});

const REQUESTS = 100;
const CHUNKS = 10;

test('dcgm-exporter dies mid-run: GPU collector down, every request relayed and counted', async () => {
  const exporter = await startFakeDcgmExporter(readFileSync(`${FIXTURES}dcgm-exporter-scrape-synthetic-2gpu-h100.prom`, 'utf8'));
  const im = await startInfermeterProcess(upstream.url, ['--gpu-source', 'dcgm-exporter', '--dcgm-exporter-url', exporter.url, '--gpu-interval', '1s', '--no-collector.engine', '--no-collector.host'], true);
  const samples = async () => parsePrometheusText(await (await request(im.metricsUrl)).body.text()).samples;
  const gpuUp = async () => sumSamples(await samples(), 'infermeter_collector_up', { collector: 'gpu' });
  try {
    for (let i = 0; i < 50 && (await gpuUp()) !== 1; i++) await new Promise((r) => setTimeout(r, 100));
    assert.equal(await gpuUp(), 1, 'up while dcgm-exporter answers');
    const agent = new Agent({ connections: 10 });
    let next = 0;
    let anomalies = 0;
    await Promise.all(Array.from({ length: 10 }, async () => {
      while (next < REQUESTS) {
        if (++next === REQUESTS / 2) await exporter.close();
        const res = await request(`${im.url}/v1/chat/completions`, { method: 'POST', dispatcher: agent, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'fake-model', stream: true, fake: { schedule: { firstMs: 5, chunks: CHUNKS, gapMs: 3, usage: CHUNKS } } }) });
        const text = await res.body.text();
        if (res.statusCode !== 200 || !text.includes(`tok${CHUNKS - 1} `) || !text.endsWith('data: [DONE]\n\n')) anomalies++;
      }
    }));
    await agent.close();
    assert.equal(anomalies, 0);
    assert.equal(await totalRequests(im.metricsUrl, 5000, REQUESTS), REQUESTS);
    for (let i = 0; i < 50 && (await gpuUp()) !== 0; i++) await new Promise((r) => setTimeout(r, 100));
    const s = await samples();
    assert.equal(sumSamples(s, 'infermeter_collector_up', { collector: 'gpu' }), 0, 'down once dcgm-exporter is gone');
    assert.equal(s.filter((x) => x.name === 'infermeter_gpu_power_watts').length, 0, 'no frozen GPU values');
    assert.equal(sumSamples(s, 'infermeter_tokens_total', { gen_ai_token_type: 'output' }), REQUESTS * CHUNKS);
  } finally {
    await im.stop();
    await exporter.close().catch(() => undefined);
  }
});
