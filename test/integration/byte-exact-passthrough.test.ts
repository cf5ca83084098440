/**
 * Hundreds of randomized streams (random event sizes and read splits, multi-byte UTF-8
 * split across writes, invalid JSON, CRLF separators, missing [DONE]): the client receives
 * exactly the upstream's bytes, minus only the usage chunk infermeter asked for itself.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rawPost, sumSamples, waitForMetrics, proxyOverFakeUpstream } from '../helpers.js';

const STREAMS = 300;
const WORDS = ['hello', ' world', 'ünïcödé', ' 日本語', ' 🚀🔥', 'Ωμέγα', ' \\"quoted\\"', ' tab\\t', ''];

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => ((s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32);
}

interface Generated {
  bytes: Buffer;
  /** What a client that did not ask for usage must receive. */
  withoutUsage: Buffer;
  invalidBeforeUsage: boolean;
}

function generate(rand: () => number): Generated {
  const sep = rand() < 0.3 ? '\r\n' : '\n';
  const blank = rand() < 0.15 ? '' : sep; // some servers separate events by a single newline
  const ev = (json: string) => `data:${rand() < 0.2 ? '' : ' '}${json}${sep}${blank}`;
  const parts: string[] = [ev('{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}')];
  const n = 1 + Math.floor(rand() * 30);
  let invalid = false;
  for (let i = 0; i < n; i++) {
    if (rand() < 0.02) {
      parts.push(ev('{"choices":[{"delta":{"content":"broken'));
      invalid = true;
      continue;
    }
    const word = WORDS[Math.floor(rand() * WORDS.length)]!;
    parts.push(ev(`{"choices":[{"index":0,"delta":{"content":"${word.repeat(1 + Math.floor(rand() * 40))}"},"finish_reason":null}]}`));
  }
  const usage = ev('{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":' + n + ',"total_tokens":' + (n + 3) + '}}');
  const done = rand() < 0.8 ? ev('[DONE]') : '';
  const bytes = Buffer.from(parts.join('') + usage + done);
  const withoutUsage = Buffer.from(parts.join('') + done);
  return { bytes, withoutUsage, invalidBeforeUsage: invalid };
}

const env = proxyOverFakeUpstream();

test(`${STREAMS} randomized streams arrive byte for byte`, async () => {
  const rand = rng(42);
  let compared = 0;
  let anomalies = 0;
  let metered = 0;
  const cases = Array.from({ length: STREAMS }, (_, i) => ({ i, gen: generate(rand), askUsage: rand() < 0.5, splits: [] as number[] }));
  for (const c of cases) {
    const count = Math.floor(rand() * 12);
    c.splits = [...new Set(Array.from({ length: count }, () => Math.floor(rand() * c.gen.bytes.length)))].sort((a, b) => a - b);
  }
  for (let i = 0; i < cases.length; i += 25) {
    await Promise.all(
      cases.slice(i, i + 25).map(async (c) => {
        const res = await rawPost(`${env.proxy.url}/v1/chat/completions`, {
          model: 'fake-model',
          stream: true,
          ...(c.askUsage ? { stream_options: { include_usage: true } } : {}),
          fake: { raw: { b64: c.gen.bytes.toString('base64'), splits: c.splits, delayMs: c.i % 3 === 0 ? 1 : 0 } },
        });
        // Metering gives up at invalid JSON; from there on nothing is touched.
        const expected = c.askUsage || c.gen.invalidBeforeUsage ? c.gen.bytes : c.gen.withoutUsage;
        compared += res.body.length;
        if (!res.body.equals(expected)) anomalies++;
        if (!c.gen.invalidBeforeUsage) metered++;
      }),
    );
  }
  console.log(`streams=${STREAMS} bytes_compared=${compared} anomalies=${anomalies}`);
  assert.equal(anomalies, 0);
  const samples = await waitForMetrics(env.proxy.metricsUrl, (s) => sumSamples(s, 'infermeter_requests_total') === STREAMS);
  assert.equal(sumSamples(samples, 'infermeter_metering_failures_total', { reason: 'invalid_json' }), STREAMS - metered);
  assert.equal(sumSamples(samples, 'infermeter_requests_total', { outcome: 'ok' }), STREAMS);
});

test('the upstream sees include_usage injected only when the client did not ask', async () => {
  const before = env.upstream.events.filter((e) => e.kind === 'request').length;
  await rawPost(`${env.proxy.url}/v1/chat/completions`, { model: 'fake-model', stream: true, fake: { schedule: { firstMs: 1, chunks: 2, gapMs: 1 } } });
  await rawPost(`${env.proxy.url}/v1/chat/completions`, { model: 'fake-model', stream: true, stream_options: { include_usage: false, continuous_usage_stats: true } });
  await rawPost(`${env.proxy.url}/v1/chat/completions`, '{"model":"fake-model","stream":false}');
  const seen = env.upstream.events.filter((e) => e.kind === 'request').slice(before).map((e) => JSON.parse(e.body!) as Record<string, unknown>);
  assert.deepEqual(seen[0]!['stream_options'], { include_usage: true });
  assert.deepEqual(seen[1]!['stream_options'], { include_usage: true, continuous_usage_stats: true });
  assert.equal(seen[2]!['stream_options'], undefined, 'non-streaming requests are forwarded untouched');
});
