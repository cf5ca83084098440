/**
 * Issue 17's breakdowns through a real proxy and a fake upstream: prompt classes, concurrency
 * bands, bounded tenants, cached and reasoning token counters.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, request } from 'undici';
import { proxyOverFakeUpstream, scrape, sumSamples, waitForMetrics } from '../helpers.js';
import type { Sample } from '../../src/lib/prom-text.js';

const env = proxyOverFakeUpstream({ tenantHeader: 'x-tenant-id' });

async function chat(body: Record<string, unknown>, headers: Record<string, string> = {}, dispatcher?: Agent): Promise<void> {
  const res = await request(`${env.proxy.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model: 'fake-model', messages: [{ role: 'user', content: 'hi' }], ...body }),
    ...(dispatcher ? { dispatcher } : {}),
  });
  await res.body.text();
}

const stream = (schedule: Record<string, unknown>) => ({ stream: true, fake: { schedule: { firstMs: 1, chunks: 4, gapMs: 1, ...schedule } } });

/** _count of a histogram per value of one label, summed over the rest. */
function countsBy(samples: Sample[], name: string, label: string, where: Record<string, string> = {}): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of samples) {
    if (s.name !== `${name}_count`) continue;
    if (!Object.entries(where).every(([k, v]) => s.labels[k] === v)) continue;
    const v = s.labels[label]!;
    out[v] = (out[v] ?? 0) + s.value;
  }
  return out;
}

test('requests of known prompt sizes land in their prompt_tokens_le class; a stream without usage is unknown', async () => {
  const sizes: [number, string][] = [[1, '256'], [256, '256'], [257, '1024'], [4096, '4096'], [4097, '16384'], [65536, '65536'], [70_000, '+Inf']];
  for (const [promptTokens, tenant] of sizes) await chat(stream({ promptTokens }), { 'x-tenant-id': `class-${tenant}` });
  // No usage at all: the client asked for none, and the upstream ignores the injected option.
  const raw = 'data: {"choices":[{"index":0,"delta":{"content":"a"}}]}\n\ndata: {"choices":[{"index":0,"delta":{"content":"b"}}]}\n\ndata: [DONE]\n\n';
  await chat({ stream: true, fake: { raw: { b64: Buffer.from(raw).toString('base64') } } }, { 'x-tenant-id': 'class-unknown' });
  const name = 'infermeter_time_to_first_token_by_prompt_seconds';
  const samples = await waitForMetrics(env.proxy.metricsUrl, (s) => Object.values(countsBy(s, name, 'prompt_tokens_le')).reduce((a, b) => a + b, 0) >= sizes.length + 1);
  assert.deepEqual(countsBy(samples, name, 'prompt_tokens_le'), { '256': 2, '1024': 1, '4096': 1, '16384': 1, '65536': 1, '+Inf': 1, unknown: 1 });
  assert.deepEqual(countsBy(samples, 'infermeter_time_to_first_output_by_prompt_seconds', 'prompt_tokens_le'), { '256': 2, '1024': 1, '4096': 1, '16384': 1, '65536': 1, '+Inf': 1, unknown: 1 });
  // The semconv histogram keeps its own labels: no class, and no tenant without --tenant-histograms.
  const semconv = samples.filter((s) => s.name === 'gen_ai_server_time_to_first_token_seconds_count');
  assert.ok(semconv.length > 0 && semconv.every((s) => s.labels['prompt_tokens_le'] === undefined && s.labels['tenant'] === undefined));
});

test('one stream at a time and 24 concurrent streams land in different in_flight_le bands', async () => {
  const name = 'infermeter_time_per_output_token_by_concurrency_seconds';
  const chunkName = 'infermeter_inter_chunk_latency_by_concurrency_seconds';
  const s0 = (await scrape(env.proxy.metricsUrl)).samples;
  const [tpot0, chunk0] = [countsBy(s0, name, 'in_flight_le'), countsBy(s0, chunkName, 'in_flight_le')];
  const total0 = sumSamples(s0, `${name}_count`);
  for (let i = 0; i < 6; i++) await chat(stream({ firstMs: 5, chunks: 5, gapMs: 2 }), { 'x-tenant-id': 'solo' });
  const agent = new Agent({ connections: 32 });
  // Every first token sees all 24 in flight, by events rather than a 300 ms head start: the 24
  // wait at the upstream until it holds all of them (each is in flight at the proxy by then),
  // and pause after their first token until every client has read its own (so none ends first).
  const received = () => env.upstream.events.filter((e) => e.kind === 'request' && e.path === '/v1/chat/completions').length;
  const before = received();
  let firstTokens = 0;
  const crowd = Array.from({ length: 24 }, async () => {
    const res = await request(`${env.proxy.url}/v1/chat/completions`, {
      method: 'POST', dispatcher: agent, headers: { 'content-type': 'application/json', 'x-tenant-id': 'crowd' },
      body: JSON.stringify({ model: 'fake-model', messages: [{ role: 'user', content: 'hi' }], stream: true, fake: { gate: 'crowd', pause: { afterChunks: 2, gate: 'crowd-rest' }, schedule: { firstMs: 1, chunks: 5, gapMs: 2 } } }),
    });
    let seen = false;
    for await (const c of res.body) {
      if (!seen && (c as Buffer).includes('tok0')) {
        seen = true;
        if (++firstTokens === 24) env.upstream.release('crowd-rest');
      }
    }
  });
  while (received() < before + 24) await new Promise((r) => setTimeout(r, 10));
  env.upstream.release('crowd');
  await Promise.all(crowd);
  await agent.close();
  const samples = await waitForMetrics(env.proxy.metricsUrl, (s) => sumSamples(s, `${name}_count`) === total0 + 30);
  const delta = (now: Record<string, number>, then: Record<string, number>) =>
    Object.fromEntries(Object.entries(now).map(([k, v]) => [k, v - (then[k] ?? 0)]).filter(([, v]) => v !== 0));
  assert.deepEqual(delta(countsBy(samples, name, 'in_flight_le'), tpot0), { '1': 6, '32': 24 }, 'single streams in band 1, the 24 concurrent ones in band 32');
  assert.deepEqual(delta(countsBy(samples, chunkName, 'in_flight_le'), chunk0), { '1': 6 * 4, '32': 24 * 4 }, 'and so are their inter-chunk gaps');
});

test('cached and reasoning token counters equal the sums of the upstream\'s usage fields', async () => {
  const name = 'infermeter_tokens_total';
  const before = (type: string, s: Sample[]) => sumSamples(s, name, { gen_ai_token_type: type });
  const s0 = (await scrape(env.proxy.metricsUrl)).samples;
  const [cached0, reasoning0] = [before('cached_input', s0), before('reasoning', s0)];
  let cached = 0;
  let reasoning = 0;
  for (let i = 0; i < 20; i++) {
    const c = (i * 37) % 101;
    const r = (i * 13) % 29;
    cached += c;
    reasoning += r;
    await chat(stream({ promptTokens: 200, cachedTokens: c, reasoningTokens: r, reasoningChunks: 2, chunks: 3 }), { 'x-tenant-id': 'details' });
  }
  // A stream whose usage has no details adds nothing to either.
  await chat(stream({ promptTokens: 200 }), { 'x-tenant-id': 'details' });
  // Every record in, the last (detail-less) one included: the next test counts from here.
  const samples = await waitForMetrics(env.proxy.metricsUrl, (s) => sumSamples(s, 'infermeter_requests_total', { tenant: 'details' }) === 21);
  assert.equal(before('cached_input', samples) - cached0, cached);
  assert.equal(before('reasoning', samples) - reasoning0, reasoning);
  assert.equal(sumSamples(samples, name, { gen_ai_token_type: 'cached_input', tenant: 'details' }), cached);
  assert.equal(sumSamples(samples, name, { gen_ai_token_type: 'reasoning', tenant: 'details' }), reasoning);
});

test('only generation requests count toward in_flight_le: slow embeddings requests in flight do not', async () => {
  const name = 'infermeter_time_per_output_token_by_concurrency_seconds';
  const s0 = (await scrape(env.proxy.metricsUrl)).samples;
  const one0 = countsBy(s0, name, 'in_flight_le')['1'] ?? 0;
  const total0 = sumSamples(s0, `${name}_count`);
  const agent = new Agent({ connections: 16 });
  // The embeddings requests stay in flight (held at the upstream) until the chat stream is done.
  const embeddings = () => env.upstream.events.filter((e) => e.kind === 'request' && e.path === '/v1/embeddings').length;
  const before = embeddings();
  const held = Array.from({ length: 10 }, async () => {
    const res = await request(`${env.proxy.url}/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ input: 'x', fake: { gate: 'embeddings' } }), dispatcher: agent });
    await res.body.text();
  });
  while (embeddings() < before + 10) await new Promise((r) => setTimeout(r, 10));
  await chat(stream({ firstMs: 100, chunks: 4, gapMs: 2 }), { 'x-tenant-id': 'solo' }, agent);
  env.upstream.release('embeddings');
  await Promise.all(held);
  await agent.close();
  const samples = await waitForMetrics(env.proxy.metricsUrl, (s) => sumSamples(s, `${name}_count`) === total0 + 1 && sumSamples(s, 'infermeter_requests_total', { route: 'embeddings' }) === 10);
  assert.equal(countsBy(samples, name, 'in_flight_le')['1'], one0 + 1, 'the chat stream was the only generation request in flight');
});

test('10,000 requests with random tenant values give at most --tenant-limit + 1 tenant values', async () => {
  const REQUESTS = 10_000;
  const agent = new Agent({ connections: 32 });
  const before = sumSamples((await scrape(env.proxy.metricsUrl)).samples, 'infermeter_requests_total');
  let i = 0;
  const worker = async () => {
    while (i < REQUESTS) {
      i++;
      const tenant = `t-${Math.random().toString(36).slice(2)}`;
      await chat({ stream: false, fake: { json: { content: 'x', promptTokens: 3, completionTokens: 2 } } }, { 'x-tenant-id': tenant }, agent);
    }
  };
  await Promise.all(Array.from({ length: 32 }, worker));
  await agent.close();
  const samples = await waitForMetrics(env.proxy.metricsUrl, (s) => sumSamples(s, 'infermeter_requests_total') === before + REQUESTS, 30_000);
  const { text } = await scrape(env.proxy.metricsUrl);
  const tenants = new Set(samples.map((s) => s.labels['tenant']).filter((t) => t !== undefined));
  assert.ok(tenants.size <= env.proxy.config.tenantLimit + 1, `${tenants.size} tenant values`);
  assert.ok(tenants.has('other'), 'tenants past the limit are counted as other');
  assert.equal(tenants.size, env.proxy.config.tenantLimit + 1, 'the limit is reached, and not passed');
  // Beyond the limit, a random tenant never reaches /metrics (the first seen ones keep theirs).
  const randomShown = [...text.matchAll(/tenant="t-[a-z0-9]+"/g)].length;
  assert.ok(randomShown <= 200, `${randomShown} lines with a random tenant`);
  assert.equal(sumSamples(samples, 'infermeter_requests_total', { tenant: 'other' }) > REQUESTS - 100, true, 'nearly every random tenant is other');
});
