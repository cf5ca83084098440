/** 10,000 requests with random model names and paths create no more than the allowed label values. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, request } from 'undici';
import { scrape, sumSamples, waitForMetrics, proxyOverFakeUpstream } from '../helpers.js';
import { ROUTE_LABELS } from '../../src/record/routes.js';

const REQUESTS = 10_000;
const env = proxyOverFakeUpstream();

test(`${REQUESTS} requests with random models and paths stay within the bounded label sets`, async () => {
  const agent = new Agent({ connections: 32 });
  let i = 0;
  const worker = async () => {
    while (i < REQUESTS) {
      const n = i++;
      const random = `model-${Math.random().toString(36).slice(2)}`;
      const model = n % 10 === 0 ? 'fake-model' : random;
      const path = n % 7 === 0 ? `/v1/${random}?user=${random}` : n % 2 ? '/v1/chat/completions' : '/v1/completions';
      const res = await request(`${env.proxy.url}${path}`, { method: 'POST', dispatcher: agent, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model, user: random }) });
      await res.body.dump();
    }
  };
  await Promise.all(Array.from({ length: 32 }, worker));
  await agent.close();
  await waitForMetrics(env.proxy.metricsUrl, (s) => sumSamples(s, 'infermeter_requests_total') === REQUESTS, 20_000);
  const { text, samples } = await scrape(env.proxy.metricsUrl);
  const values = (label: string) => new Set(samples.map((s) => s.labels[label]).filter((v) => v !== undefined));
  assert.deepEqual([...values('gen_ai_request_model')].sort(), ['fake-model', 'other']);
  for (const route of values('route')) assert.ok(ROUTE_LABELS.includes(route!), `route label ${route} is in the route table`);
  assert.ok(!text.includes('model-'), 'no random model name reaches /metrics');
  assert.ok(samples.length < 1000, `${samples.length} series`);
});
