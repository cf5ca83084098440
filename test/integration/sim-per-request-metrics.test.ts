/**
 * The simulator with --enable-per-request-metrics (vLLM 0.25's PerRequestTimingMetrics): the
 * `metrics` object in a non-streamed body, in a stream's final usage chunk, and in the response
 * of `response.completed`, its times the engine's own. Behind one slot, a second request's
 * queue_time_ms is the time the first held it; through infermeter the object reaches the client.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { startSimulator, type Simulator } from '../../src/sim/index.js';
import { startProxy, type TestProxy } from '../helpers.js';

let sim: Simulator;
let meter: TestProxy;
after(async () => {
  await meter?.close();
  await sim?.close();
});

const MODEL = 'meta-llama/Llama-2-7b-chat-hf';
const post = async (base: string, path: string, body: unknown) => {
  const res = await request(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.statusCode, text: await res.body.text() };
};
const events = (sse: string) => sse.split('\n').filter((l) => l.startsWith('data: ') && l !== 'data: [DONE]').map((l) => JSON.parse(l.slice(6)) as Record<string, unknown>);
type Timing = Record<'queue_time_ms' | 'time_to_first_token_ms' | 'generation_time_ms' | 'mean_itl_ms' | 'tokens_per_second', number | null>;

function plausible(t: Timing, tokens: number, what: string): void {
  assert.deepEqual(Object.keys(t).sort(), ['generation_time_ms', 'mean_itl_ms', 'queue_time_ms', 'time_to_first_token_ms', 'tokens_per_second'], what);
  for (const [k, v] of Object.entries(t)) assert.ok(typeof v === 'number' && v >= 0, `${what}: ${k} ${v}`);
  assert.ok(t.generation_time_ms! >= t.time_to_first_token_ms!, `${what}: generation covers the first token`);
  assert.ok(Math.abs(t.mean_itl_ms! * (tokens - 1) - (t.generation_time_ms! - t.time_to_first_token_ms!)) < 0.01, `${what}: the mean gap is the decode time over ${tokens - 1} gaps`);
  assert.ok(Math.abs(t.tokens_per_second! - tokens / (t.generation_time_ms! / 1000)) < 0.01, `${what}: tokens per second of its running time`);
}

test('--enable-per-request-metrics: the metrics object in the body, the final usage chunk and response.completed; a queued request\'s queue time is the slot\'s holder\'s run', { timeout: 60_000 }, async () => {
  sim = await startSimulator({ listen: '127.0.0.1:0', speed: '5', maxNumSeqs: '1', outputTokens: '40-40', perRequestMetrics: 'true' });
  meter = await startProxy({ upstream: sim.url });
  // Non-streamed chat: a top-level metrics object.
  const body = JSON.parse((await post(sim.url, '/v1/chat/completions', { model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 40 })).text) as { metrics: Timing };
  plausible(body.metrics, 40, 'chat body');
  // Two streams behind one slot: the second waits for the first.
  const stream = (base: string) => post(base, '/v1/chat/completions', { model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 40, stream: true, stream_options: { include_usage: true } });
  const [a, b] = await Promise.all([stream(sim.url), new Promise((r) => setTimeout(r, 20)).then(() => stream(sim.url))]);
  const last = (s: string) => events(s).at(-1) as { usage: unknown; choices: unknown[]; metrics: Timing };
  const [ta, tb] = [last(a.text), last(b.text)];
  assert.deepEqual(ta.choices, [], 'the usage-only chunk carries it');
  assert.ok(ta.usage && tb.usage);
  plausible(ta.metrics, 40, 'first stream');
  plausible(tb.metrics, 40, 'second stream');
  assert.equal(events(a.text).filter((e) => 'metrics' in e).length, 1, 'only the final chunk');
  console.log(`# first: queue ${ta.metrics.queue_time_ms!.toFixed(1)} ms, run ${ta.metrics.generation_time_ms!.toFixed(1)} ms; second: queue ${tb.metrics.queue_time_ms!.toFixed(1)} ms`);
  // It came about 20 ms after the first: it waited most of the first's run (half is the bound a loaded machine keeps).
  assert.ok(tb.metrics.queue_time_ms! > ta.metrics.generation_time_ms! / 2, 'the second waited for the first to end');
  assert.ok(ta.metrics.queue_time_ms! < tb.metrics.queue_time_ms!);
  // Completions, streamed: the final usage chunk too.
  const c = await post(sim.url, '/v1/completions', { model: MODEL, prompt: 'hi', max_tokens: 40, stream: true, stream_options: { include_usage: true } });
  plausible((events(c.text).at(-1) as { metrics: Timing }).metrics, 40, 'completions stream');
  // Responses, streamed: inside response.completed (response.incomplete where it stopped at its limit).
  const r = await post(sim.url, '/v1/responses', { model: MODEL, input: 'hi', max_output_tokens: 40, stream: true });
  const done = events(r.text).find((e) => e['type'] === 'response.completed' || e['type'] === 'response.incomplete') as { response: { metrics: Timing } };
  plausible(done.response.metrics, 40, 'response.completed');
  // Through infermeter, asked for by the client: the object arrives as the engine sent it.
  const via = last((await stream(meter.url)).text);
  plausible(via.metrics, 40, 'through infermeter');
  // Off by default: no metrics anywhere.
  const plain = await startSimulator({ listen: '127.0.0.1:0', speed: 'max', outputTokens: '5-5' });
  try {
    const p = await post(plain.url, '/v1/chat/completions', { model: MODEL, messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { include_usage: true } });
    assert.ok(!p.text.includes('"metrics"'));
  } finally {
    await plain.close();
  }
});
