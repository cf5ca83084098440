/**
 * No prompt, completion, API key or Authorization header appears in logs at any level, or
 * in /metrics: traffic that carries markers everywhere, at --log-level trace, including
 * failures that log warnings.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { startFakeUpstream } from '../fakes/upstream.js';
import { report, startInfermeterProcess } from './harness.js';
import { scrape } from '../helpers.js';

const SECRET_KEY = 'sk-LEAKCHECK-0123456789abcdef';
const PROMPT = 'PROMPT-LEAKCHECK the quarterly numbers';
const MODEL_SECRET = 'model-LEAKCHECK-user-42';

test('trace-level logs and /metrics carry no secrets, prompts or completions', async () => {
  const upstream = await startFakeUpstream();
  const im = await startInfermeterProcess(upstream.url, ['--log-level', 'trace', '--idle-timeout', '200ms', '--headers-timeout', '300ms']);
  let requests = 0;
  try {
    const send = async (body: object, path = '/v1/chat/completions') => {
      requests++;
      try {
        const res = await request(`${im.url}${path}?api_key=${SECRET_KEY}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${SECRET_KEY}`, 'x-api-key': SECRET_KEY, cookie: `session=${SECRET_KEY}` },
          body: JSON.stringify({ model: MODEL_SECRET, messages: [{ role: 'user', content: PROMPT }], user: SECRET_KEY, ...body }),
        });
        await res.body.text();
      } catch {
        /* faults below cut streams */
      }
    };
    await send({ stream: true, fake: { schedule: { firstMs: 1, chunks: 5, gapMs: 1 } } });
    await send({ stream: false, fake: { json: { content: 'COMPLETION-LEAKCHECK secret answer', promptTokens: 3, completionTokens: 4 } } });
    await send({ stream: true, fake: { schedule: { firstMs: 1, chunks: 5, gapMs: 1 }, fault: { afterChunks: 2, kind: 'error' } } });
    await send({ stream: true, fake: { schedule: { firstMs: 1, chunks: 50, gapMs: 1 }, fault: { afterChunks: 2, kind: 'hang' } } });
    await send({ stream: true, fake: { headersDelayMs: 1000 } });
    await send({ stream: true, fake: { status: { code: 401, body: `{"error":"bad key ${SECRET_KEY}"}` } } });
    await send({}, '/v1/embeddings');
    await new Promise((r) => setTimeout(r, 300));
    const { text: metrics } = await scrape(im.metricsUrl);
    await im.stop();
    const log = im.log();
    const leaks = ['LEAKCHECK'].filter((m) => log.includes(m) || metrics.includes(m));
    report({ scenario: 'secrets in logs (trace) and /metrics', requests, bytesCompared: log.length + metrics.length, anomalies: leaks.length, peakRssMiB: 0, fdsBefore: 0, fdsAfter: 0 });
    assert.ok(log.length > 0 && /"level":(10|20|40)/.test(log), 'the run produced trace/debug/warn lines to check');
    assert.deepEqual(leaks, [], `a marker leaked:\n${log.split('\n').filter((l) => l.includes('LEAKCHECK')).join('\n')}`);
  } finally {
    await im.stop();
    await upstream.close();
  }
});
