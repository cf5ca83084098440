// test-group: alone (the abort propagation P99 under 50 ms: the machine to itself)
/**
 * The waste ledger end to end (docs/waste.md), through real sockets: the simulator behind
 * infermeter, its own counters the truth.
 * - 50 clients leave mid-stream while other streams run to their end: the wasted output tokens
 *   (client_abort) equal what the simulator generated for the aborted requests, within 1 %; every
 *   abort reached the upstream (infermeter_abort_propagation_seconds, one per abort, P99 printed);
 *   the engine's running count came back to what infermeter had in flight within its scrapes.
 * - The simulator's admission limit (--max-num-queued-reqs), 503 and 429: each refused request is
 *   `rejected` with the prompt it had received.
 * - Clients with a 300 ms timeout behind a request that holds the only slot: `queue_timeout`, with their prompts.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { startSimulator, type Simulator } from '../../src/sim/index.js';
import { startProxy, sumSamples, waitForMetrics, type TestProxy } from '../helpers.js';
import type { Sample } from '../../src/lib/prom-text.js';

const opened: { close(): Promise<void> }[] = [];
after(async () => {
  for (const x of opened.reverse()) await x.close();
});

async function pair(sim: Parameters<typeof startSimulator>[0], proxy: Record<string, string> = {}): Promise<{ sim: Simulator; meter: TestProxy }> {
  const s = await startSimulator({ listen: '127.0.0.1:0', ...sim });
  opened.push(s);
  const meter = await startProxy({ upstream: s.url, collectorEngine: 'true', engineInterval: '0.25s', ...proxy });
  opened.push(meter);
  return { sim: s, meter };
}

/** A prompt of `tokens` simulator tokens (4 characters each). */
const prompt = (tokens: number, i: number) => `${String(i).padStart(4, '0')}${'abcd'.repeat(tokens - 1)}`;
const chat = (content: string, extra: Record<string, unknown> = {}) => ({ model: 'meta-llama/Llama-2-7b-chat-hf', messages: [{ role: 'user', content }], stream: true, ...extra });

/** Streams `body`; leaves after `leaveAfter` content chunks (null: reads to the end). Returns the chunks read. */
async function stream(url: string, body: unknown, leaveAfter: number | null, timeoutMs?: number): Promise<number> {
  const ac = new AbortController();
  const timer = timeoutMs ? setTimeout(() => ac.abort(), timeoutMs) : null;
  let chunks = 0;
  try {
    const res = await request(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal: ac.signal });
    for await (const c of res.body) {
      chunks += ((c as Buffer).toString().match(/"content":"[^"]/g) ?? []).length;
      if (leaveAfter !== null && chunks >= leaveAfter) {
        ac.abort();
        break;
      }
    }
  } catch {
    /* the abort */
  } finally {
    if (timer) clearTimeout(timer);
  }
  return chunks;
}

const wasted = (s: Sample[], cause: string, type: string) => sumSamples(s, 'infermeter_wasted_tokens_total', { cause, gen_ai_token_type: type });

test('50 clients leave mid-stream under load: wasted output equals what the engine generated for them, within 1%; every abort propagated; the engine let go', { timeout: 120_000 }, async () => {
  const { sim, meter } = await pair({ speed: '5', outputTokens: '400-400', seed: '7' });
  const ABORTS = 50;
  // The unseen tail counts from the engine's first idle scrape (the ledger reads the machine each second): let it come before the load.
  await waitForMetrics(meter.metricsUrl, (x) => x.some((m) => m.name === 'infermeter_engine_generation_tokens_total'), 5000);
  await new Promise((r) => setTimeout(r, 1100));
  const jobs: Promise<number>[] = [];
  for (let i = 0; i < ABORTS; i++) {
    jobs.push(stream(meter.url, chat(prompt(200, i), { max_tokens: 400 }), 20 + (i * 7) % 150));
    // ... beside streams that run to their end: the load the aborts happen under.
    if (i % 5 === 0) jobs.push(stream(meter.url, chat(prompt(64, 1000 + i), { max_tokens: 60 }), null));
    await new Promise((r) => setTimeout(r, 20));
  }
  await Promise.all(jobs);
  const seen = await waitForMetrics(meter.metricsUrl, (x) => sumSamples(x, 'infermeter_abort_propagation_seconds_count') === ABORTS && sumSamples(x, 'infermeter_requests_total', { outcome: 'client_abort' }) === ABORTS, 15_000);
  // The simulator frees an aborted request when its connection closes: by now it has.
  await new Promise((r) => setTimeout(r, 200));
  const truth = sim.state().abortedGenerationTokens;
  const read = wasted(seen, 'client_abort', 'output');
  // The unseen tail (tokens made after the last one infermeter read) counts at the engine's first idle scrape.
  let s = seen;
  try {
    s = await waitForMetrics(meter.metricsUrl, (x) => Math.abs(wasted(x, 'client_abort', 'output') - truth) / truth <= 0.01 && (read === truth || wasted(x, 'client_abort', 'output') > read), 10_000);
  } catch {
    s = await waitForMetrics(meter.metricsUrl, () => true, 1000); // the assertion below says by how much
  }
  const counted = wasted(s, 'client_abort', 'output');
  const off = Math.abs(counted - truth) / truth;
  console.log(`# aborted: simulator generated ${truth} tokens for them, infermeter read ${read} and counted ${counted.toFixed(1)} wasted with the unseen tail (${(off * 100).toFixed(2)}% apart); prompts ${wasted(s, 'client_abort', 'input')} (simulator ${sim.state().abortedPromptTokens})`);
  assert.ok(truth > ABORTS * 20, `the aborted requests generated tokens (${truth})`);
  assert.ok(off <= 0.01, `wasted output ${counted} within 1% of the simulator's ${truth}`);
  // No usage came for them: their prompts count from the body's size, an over-estimate by the JSON around the prompt.
  const prompts = wasted(s, 'client_abort', 'input');
  assert.ok(prompts >= sim.state().abortedPromptTokens && prompts <= sim.state().abortedPromptTokens * 1.5, `prompt tokens ${prompts} against the simulator's ${sim.state().abortedPromptTokens}`);
  // The effective goodput: good tokens over all tokens sent; no SLO configured, so every completed request is good.
  const ratio = sumSamples(await waitForMetrics(meter.metricsUrl, (x) => x.some((m) => m.name === 'infermeter_effective_goodput_ratio'), 5000), 'infermeter_effective_goodput_ratio');
  assert.ok(ratio > 0 && ratio < 1, `effective goodput ${ratio} below 1: the aborted tokens served nobody`);
  // The engine's release, read at its scrapes: its running count came back to infermeter's in flight.
  const released = await waitForMetrics(meter.metricsUrl, (x) => sumSamples(x, 'infermeter_abort_engine_release_seconds_count') >= 1, 10_000);
  const p99 = await propagationP99(meter);
  console.log(`# abort propagation P99 ${p99 === null ? 'n/a' : `${(p99 * 1e6).toFixed(0)} µs`}; engine release observed ${sumSamples(released, 'infermeter_abort_engine_release_seconds_count')} times, `
    + `mean ${(sumSamples(released, 'infermeter_abort_engine_release_seconds_sum') / sumSamples(released, 'infermeter_abort_engine_release_seconds_count')).toFixed(3)} s`);
  assert.ok(p99 !== null && p99 < 0.05, 'propagation P99 under 50 ms');
  assert.ok(sumSamples(released, 'infermeter_abort_engine_release_seconds_bucket', { le: '1' }) >= 1, 'released within a second (four scrapes at 0.25 s)');
});

async function propagationP99(meter: TestProxy): Promise<number | null> {
  const res = await request(meter.metricsUrl.replace('/metrics', '/api/v1/status'));
  const doc = (await res.body.json()) as { aborts?: { propagationP99Seconds: number | null }[] };
  return doc.aborts?.[0]?.propagationP99Seconds ?? null;
}

for (const status of ['503', '429']) {
  test(`the engine's admission limit refuses with ${status}: rejected, with the prompts it received`, { timeout: 60_000 }, async () => {
    const { sim, meter } = await pair({ speed: '10', maxNumSeqs: '1', maxNumQueuedReqs: '1', queueFullStatus: status, outputTokens: '200-200' });
    const N = 8;
    const codes = await Promise.all(Array.from({ length: N }, async (_, i) => {
      await new Promise((r) => setTimeout(r, i * 15));
      const res = await request(`${meter.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(chat(prompt(2000, i), { max_tokens: 200 })) });
      await res.body.text();
      return res.statusCode;
    }));
    const refused = codes.filter((c) => c === Number(status)).length;
    assert.equal(refused, sim.state().queueFull, 'the simulator counted the refusals the clients saw');
    assert.ok(refused >= N - 3, `most were refused (${codes.join(',')})`);
    const s = await waitForMetrics(meter.metricsUrl, (x) => sumSamples(x, 'infermeter_requests_total') === N, 15_000);
    const input = wasted(s, 'rejected', 'input');
    const truth = sim.state().queueFullPromptTokens;
    console.log(`# ${status}: ${refused} refused; rejected input tokens ${input}, the simulator's ${truth} (${((input / truth - 1) * 100).toFixed(1)}% over: the JSON around each prompt)`);
    assert.ok(input >= truth && input <= truth * 1.05, `rejected input ${input} within 5% above the simulator's ${truth}`);
    assert.equal(wasted(s, 'rejected', 'output'), 0);
    assert.equal(wasted(s, 'client_abort', 'output') + wasted(s, 'queue_timeout', 'input'), 0, 'no other cause');
  });
}

test('clients that give up before their first token against a queueing engine: queue_timeout, with their prompts', { timeout: 60_000 }, async () => {
  const { sim, meter } = await pair({ speed: '2', maxNumSeqs: '1', outputTokens: '100-100' });
  // One request holds the only slot for about 2 s; the next ones wait behind it, and their clients give up after 300 ms.
  const holder = stream(meter.url, chat(prompt(64, 0), { max_tokens: 100 }), null);
  await new Promise((r) => setTimeout(r, 200));
  const TIMED_OUT = 4;
  const read = await Promise.all(Array.from({ length: TIMED_OUT }, (_, i) => stream(meter.url, chat(prompt(2000, i + 1), { max_tokens: 10 }), null, 300)));
  assert.deepEqual(read, new Array(TIMED_OUT).fill(0), 'none had a token');
  const s = await waitForMetrics(meter.metricsUrl, (x) => sumSamples(x, 'infermeter_requests_total', { outcome: 'client_abort' }) === TIMED_OUT, 10_000);
  const input = wasted(s, 'queue_timeout', 'input');
  const truth = sim.state().abortedPromptTokens;
  console.log(`# queue_timeout: ${TIMED_OUT} requests, input tokens ${input}, the simulator's ${truth}`);
  assert.ok(input >= truth && input <= truth * 1.05, `queue_timeout input ${input} within 5% above the simulator's ${truth}`);
  assert.equal(wasted(s, 'client_abort', 'output'), 0, 'nothing aborted after a token');
  await holder;
});
