/**
 * README, "Metrics": the model label takes only models the upstream lists at /v1/models
 * ("refreshed; at most 100"), anything else is `other`; "Several engines": each list is
 * re-read every `--models-refresh`. The upstream here is a real server whose /v1/models
 * answer the test changes while infermeter runs.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rawPost, scrape, startProxy, sumSamples, waitForMetrics } from '../helpers.js';
import type { Sample } from '../../src/lib/prom-text.js';

/** README's bound on the model label set. */
const README_MODEL_LIMIT = 100;
const REFRESH_SECONDS = 1;

let served: string[] = [];
/** Moments (performance.now()) at which /v1/models was answered, with what it listed. */
const listings: { at: number; ids: string[] }[] = [];
let server: Server;
let upstream = '';

before(async () => {
  server = createServer((req, res) => {
    if (req.url?.startsWith('/v1/models')) {
      const ids = [...served];
      listings.push({ at: performance.now(), ids });
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data: ids.map((id) => ({ id, object: 'model' })) }));
      return;
    }
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n');
      res.end('data: {"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1}}\n\ndata: [DONE]\n\n');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  upstream = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => new Promise<void>((r) => server.close(() => r())));

const ask = (url: string, model: string) => rawPost(`${url}/v1/chat/completions`, { model, stream: true });
const requests = (s: Sample[], model?: string) => sumSamples(s, 'infermeter_requests_total', model === undefined ? {} : { gen_ai_request_model: model });

test('a model the upstream starts serving after startup gets its own label after one --models-refresh', { timeout: 30_000 }, async () => {
  served = ['early-model'];
  const proxy = await startProxy({ upstream, modelsRefresh: `${REFRESH_SECONDS}s` });
  try {
    await ask(proxy.url, 'early-model');
    served = ['early-model', 'late-model'];
    const changedAt = performance.now();
    // No request for late-model is sent before the refresh: a miss would trigger a re-read of
    // its own (rate-limited to one per 5 s), and this test is about the periodic one.
    const deadline = changedAt + 2.5 * REFRESH_SECONDS * 1000;
    while (!listings.some((l) => l.at > changedAt && l.ids.includes('late-model'))) {
      assert.ok(performance.now() < deadline, `no /v1/models re-read within ${2.5 * REFRESH_SECONDS} s of the change (--models-refresh ${REFRESH_SECONDS}s)`);
      await new Promise((r) => setTimeout(r, 20));
    }
    // The answer has left the upstream. infermeter reads the list one request at a time, so
    // its next read (the following --models-refresh) comes only once it has applied this one.
    const answered = listings.findIndex((l) => l.at > changedAt && l.ids.includes('late-model'));
    const nextBy = performance.now() + 2.5 * REFRESH_SECONDS * 1000;
    while (listings.length <= answered + 1) {
      assert.ok(performance.now() < nextBy, `no /v1/models read after the one that listed late-model within ${2.5 * REFRESH_SECONDS} s`);
      await new Promise((r) => setTimeout(r, 20));
    }
    await ask(proxy.url, 'late-model');
    const s = await waitForMetrics(proxy.metricsUrl, (x) => requests(x) === 2, 5000);
    assert.equal(requests(s, 'late-model'), 1, 'the late model has its own label');
    assert.equal(requests(s, 'early-model'), 1);
    assert.equal(requests(s, 'other'), 0);
  } finally {
    await proxy.close();
  }
});

test('an upstream listing more than 100 models: the first 100 are labels, the rest count as other', { timeout: 60_000 }, async () => {
  const listed = 150;
  served = Array.from({ length: listed }, (_, i) => `m-${String(i).padStart(3, '0')}`);
  const proxy = await startProxy({ upstream, modelsRefresh: '60s' });
  try {
    for (const model of served) await ask(proxy.url, model);
    const s = await waitForMetrics(proxy.metricsUrl, (x) => requests(x) === listed, 10_000);
    const labels = new Set(s.filter((x) => x.name === 'infermeter_requests_total').map((x) => x.labels['gen_ai_request_model']!));
    // README promises "at most 100" but not which 100: infermeter keeps the first 100 in the
    // list's order (src/metrics/models.ts), and this pins that choice.
    const expectedLabels = served.slice(0, README_MODEL_LIMIT);
    for (const m of expectedLabels) assert.equal(requests(s, m), 1, `${m} has its own label`);
    assert.equal(requests(s, 'other'), listed - README_MODEL_LIMIT, 'the models past the limit count as other');
    assert.deepEqual([...labels].sort(), [...expectedLabels, 'other'].sort(), 'the label set is the first 100 plus other');
    // The series count stays bounded: every request metric's model label has at most 101 values.
    const { samples } = await scrape(proxy.metricsUrl);
    const perModel = new Set(samples.map((x) => x.labels['gen_ai_request_model']).filter((m) => m !== undefined));
    assert.ok(perModel.size <= README_MODEL_LIMIT + 1, `${perModel.size} distinct model label values on /metrics`);
  } finally {
    await proxy.close();
  }
});
