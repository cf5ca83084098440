/** The waste ledger's reading of a record: its cause, its prompt, the effective goodput, the abort's propagation and the engine's release. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { pino } from 'pino';
import { DEFAULT_BUCKETS } from '../../../src/lib/metric-def.js';
import { GOODPUT_WINDOW_S, RELEASE_GIVE_UP_MS, TAIL_CAP_TOKENS, WasteLedger, promptTokensOf, wasteCauseOf } from '../../../src/metrics/waste/ledger.js';
import type { MachineState } from '../../../src/collectors/snapshot.js';
import { UNMEASURED, type RequestRecord } from '../../../src/record/record.js';
import { parsePrometheusText, sumSamples } from '../../../src/lib/prom-text.js';

const rec = (o: Partial<RequestRecord>): RequestRecord => ({
  ...UNMEASURED, route: 'chat_completions', operation: 'chat', model: 'm', outcome: 'ok', status: 200, streamed: true, errorType: null, startedAt: 0, tenant: null, upstream: 0, ...o,
});

test('each cause from the outcome, the status, the tokens seen and whether the abort reached the upstream', () => {
  const cases: [Partial<RequestRecord>, string | null][] = [
    [{}, null],
    [{ outcome: 'client_abort', outputTokens: 12, abortPropagation: 0.0002 }, 'client_abort'],
    [{ outcome: 'client_abort', outputTokens: 0, abortPropagation: 0.0002 }, 'queue_timeout'],
    [{ outcome: 'client_abort', outputTokens: 0, abortPropagation: 0.0002, streamed: false }, 'client_abort'],
    [{ outcome: 'client_abort', outputTokens: 0, abortPropagation: -1 }, null],
    [{ outcome: 'upstream_error', status: 503 }, 'rejected'],
    [{ outcome: 'upstream_error', status: 429 }, 'rejected'],
    [{ outcome: 'upstream_error', status: 500 }, null],
    [{ outcome: 'upstream_error', status: 503, upstream: -1 }, null],
    [{ outcome: 'client_abort', abortPropagation: 0.001, route: 'embeddings' }, null],
  ];
  for (const [o, want] of cases) assert.equal(wasteCauseOf(rec(o)), want, JSON.stringify(o));
});

test('a prompt: the usage\'s tokens where reported, else the body\'s bytes at the characters per token, rounded up', () => {
  assert.equal(promptTokensOf(rec({ inputTokensKnown: true, inputTokens: 77, requestBytes: 4000 }), 4), 77);
  assert.equal(promptTokensOf(rec({ requestBytes: 4001 }), 4), 1001);
  assert.equal(promptTokensOf(rec({ requestBytes: 0 }), 4), 0);
});

function ledger(engines: () => unknown[], now: { t: number }) {
  const registry = new Registry();
  const machine = { read: () => ({ gpus: [], engines: engines(), gpuEngines: null }) as unknown as MachineState };
  const upstreams = [{ name: 'a' }, { name: 'b' }] as never;
  const w = new WasteLedger({ registry, machine, upstreams, buckets: { ...DEFAULT_BUCKETS } as never, charsPerToken: 4, log: pino({ level: 'silent' }), now: () => now.t });
  const samples = async () => parsePrometheusText(await registry.metrics()).samples;
  return { w, samples };
}

test('tokens by model, upstream, cause and type; the effective goodput over the window; an unjudged completed request is good', async () => {
  const now = { t: 100_000 };
  const { w, samples } = ledger(() => [], now);
  const records = [
    rec({ outputTokens: 300 }),
    rec({ outputTokens: 100, outcome: 'client_abort', abortPropagation: 0.0001, requestBytes: 800 }),
    rec({ outcome: 'client_abort', abortPropagation: 0.0001, requestBytes: 400, upstream: 1 }),
    rec({ outcome: 'upstream_error', status: 429, inputTokensKnown: true, inputTokens: 50 }),
  ];
  w.ingest({ records, labels: records.map(() => 'm'), verdicts: [[{ slo: 'ttft', name: 'ttft', good: true }], null, null, null] as never, inFlight: 0 });
  w.tick();
  const s = await samples();
  const t = (cause: string, type: string, upstream?: string) => sumSamples(s, 'infermeter_wasted_tokens_total', { cause, gen_ai_token_type: type, ...(upstream ? { upstream } : {}) });
  assert.equal(t('client_abort', 'input', 'a'), 200);
  assert.equal(t('client_abort', 'output', 'a'), 100);
  assert.equal(t('queue_timeout', 'input', 'b'), 100);
  assert.equal(t('queue_timeout', 'output'), 0);
  assert.equal(t('rejected', 'input'), 50);
  assert.equal(sumSamples(s, 'infermeter_effective_goodput_ratio', { gen_ai_request_model: 'm' }), 300 / 400);
  const m = w.status().models.get('m')!;
  assert.equal(m.effectiveGoodput, 0.75);
  assert.equal(m.outputTokensPerSecond, 400 / GOODPUT_WINDOW_S);
  // A breach makes a completed request's tokens not good.
  w.ingest({ records: [rec({ outputTokens: 100 })], labels: ['m'], verdicts: [[{ slo: 'ttft', name: 'ttft', good: false }]] as never, inFlight: 0 });
  assert.equal(w.status().models.get('m')!.effectiveGoodput, 300 / 500);
  // Out of the window, the tokens leave it.
  now.t += (GOODPUT_WINDOW_S + 1) * 1000;
  assert.equal(w.status().models.get('m')!.effectiveGoodput, null);
});

test('the abort\'s propagation per upstream; the engine released at its first scrape after the abort holding no more than infermeter has in flight', async () => {
  const now = { t: 100_000 };
  let engine = { upstream: 'a', running: 5, waiting: 1, at: 99_000 };
  const { w, samples } = ledger(() => [engine], now);
  const abort = rec({ outcome: 'client_abort', outputTokens: 3, abortPropagation: 0.0004 });
  w.ingest({ records: [abort, abort], labels: ['m', 'm'], verdicts: [null, null], inFlight: 0, inFlightByUpstream: [2, 0] });
  w.tick();
  assert.equal(w.status().upstreams[0]!.releasePending, true, 'a scrape before the abort says nothing');
  now.t = 100_500;
  engine = { upstream: 'a', running: 3, waiting: 0, at: 100_250 };
  w.tick();
  assert.equal(w.status().upstreams[0]!.releasePending, true, 'still more than the 2 in flight');
  now.t = 101_000;
  engine = { upstream: 'a', running: 2, waiting: 0, at: 100_750 };
  w.tick();
  const s = await samples();
  assert.equal(sumSamples(s, 'infermeter_abort_propagation_seconds_count', { upstream: 'a' }), 2);
  assert.equal(sumSamples(s, 'infermeter_abort_engine_release_seconds_count', { upstream: 'a' }), 1);
  assert.equal(sumSamples(s, 'infermeter_abort_engine_release_seconds_sum', { upstream: 'a' }), 0.75);
  const u = w.status().upstreams[0]!;
  assert.deepEqual([u.aborts, u.releasePending, u.lastReleaseSeconds, u.propagationP99Seconds], [2, false, 0.75, 0.0004]);
  // An engine that never comes down (another client holds it): given up on, no observation.
  w.ingest({ records: [abort], labels: ['m'], verdicts: [null], inFlight: 0, inFlightByUpstream: [0, 0] });
  engine = { upstream: 'a', running: 9, waiting: 0, at: 102_000 };
  now.t += RELEASE_GIVE_UP_MS + 1;
  w.tick();
  assert.equal(w.status().upstreams[0]!.releasePending, false);
  assert.equal(sumSamples(await samples(), 'infermeter_abort_engine_release_seconds_count'), 1);
});

test('preempted: the engine\'s recomputed tokens between readings, split by the models the upstream served; a first reading or a restart is a baseline', async () => {
  const now = { t: 100_000 };
  let engine: Record<string, unknown> = { upstream: 'a', running: 0, waiting: 0, at: 1, recomputedPromptTokensTotal: 1000, recomputedOutputTokensTotal: 50 };
  const { w, samples } = ledger(() => [engine], now);
  w.tick(); // baseline
  const served = [rec({ outputTokens: 299 }), rec({ outputTokens: 99, model: 'n' })];
  w.ingest({ records: served, labels: ['m', 'n'], verdicts: [null, null], inFlight: 0 });
  engine = { ...engine, at: 2, recomputedPromptTokensTotal: 1400, recomputedOutputTokensTotal: 90 };
  w.tick();
  w.tick(); // the same reading again: nothing more
  let s = await samples();
  const t = (model: string, type: string) => sumSamples(s, 'infermeter_wasted_tokens_total', { gen_ai_request_model: model, cause: 'preempted', gen_ai_token_type: type, upstream: 'a' });
  assert.deepEqual([t('m', 'input'), t('n', 'input'), t('m', 'output'), t('n', 'output')], [300, 100, 30, 10], 'by output tokens (+1 a request): 300 to 100');
  // A restart: the counters went back; then 10 more with nobody served since: the last model served.
  engine = { ...engine, at: 3, recomputedPromptTokensTotal: 5, recomputedOutputTokensTotal: 0 };
  w.tick();
  engine = { ...engine, at: 4, recomputedPromptTokensTotal: 15, recomputedOutputTokensTotal: 0 };
  w.tick();
  s = await samples();
  assert.equal(t('n', 'input'), 110);
  assert.equal(w.status().models.get('m')!.tokens.preempted.input, 300);
  // An engine that does not report them (vLLM): nothing.
  engine = { upstream: 'a', running: 0, waiting: 0, at: 5, recomputedPromptTokensTotal: null, recomputedOutputTokensTotal: null };
  w.tick();
  assert.equal(sumSamples(await samples(), 'infermeter_wasted_tokens_total', { cause: 'preempted' }), 400 + 40 + 10);
});

test('the unseen tail: at an idle scrape, what the engine generated beyond what infermeter read goes to the aborts since, capped per abort', async () => {
  const now = { t: 100_000 };
  let engine: Record<string, unknown> = { upstream: 'a', running: 0, waiting: 0, at: 100_010, generationTokensTotal: 1000 };
  const { w, samples } = ledger(() => [engine], now);
  w.ingest({ records: [], labels: [], verdicts: [], inFlight: 0, inFlightByUpstream: [0, 0] });
  now.t = 100_020;
  w.tick(); // the baseline: 1000
  const out = (cause: string) => sumSamples(s, 'infermeter_wasted_tokens_total', { cause, gen_ai_token_type: 'output', upstream: 'a' });
  // 300 read from a completed request, 20 from a client abort, 0 from a queue timeout; the engine made 330.
  const records = [rec({ outputTokens: 300 }), rec({ outcome: 'client_abort', outputTokens: 20, abortPropagation: 0.001 }), rec({ outcome: 'client_abort', outputTokens: 0, abortPropagation: 0.001 })];
  now.t = 100_100;
  w.ingest({ records, labels: ['m', 'm', 'm'], verdicts: [null, null, null], inFlight: 0, inFlightByUpstream: [2, 0] });
  // Busy at its scrape (the engine holds one): not idle, nothing yet.
  engine = { ...engine, at: 100_200, running: 1, generationTokensTotal: 1320 };
  now.t = 100_300;
  w.tick();
  let s = await samples();
  assert.equal(out('client_abort'), 20);
  // Idle at the engine, but infermeter's last batch before the scrape had 2 in flight: not idle.
  engine = { ...engine, at: 100_400, running: 0, generationTokensTotal: 1330 };
  now.t = 100_500;
  w.tick();
  s = await samples();
  assert.equal(out('client_abort'), 20);
  // The batch saying 0 in flight, then an idle scrape: the 10 unseen go 5 and 5 to the two aborts.
  w.ingest({ records: [], labels: [], verdicts: [], inFlight: 0, inFlightByUpstream: [0, 0] });
  engine = { ...engine, at: 100_600 };
  now.t = 100_700;
  w.tick();
  s = await samples();
  assert.deepEqual([out('client_abort'), out('queue_timeout')], [25, 5]);
  assert.equal(w.status().models.get('m')!.tokens.client_abort.output, 25);
  // Traffic that bypassed infermeter: 1000 more with one abort since: at most the cap goes to it.
  w.ingest({ records: [rec({ outcome: 'client_abort', outputTokens: 4, abortPropagation: 0.001 })], labels: ['m'], verdicts: [null], inFlight: 0, inFlightByUpstream: [0, 0] });
  engine = { ...engine, at: 100_800, generationTokensTotal: 2334 };
  now.t = 100_900;
  w.tick();
  s = await samples();
  assert.equal(out('client_abort'), 25 + 4 + TAIL_CAP_TOKENS);
  // No abort since: an excess is someone else's; a counter that went back is a new baseline.
  engine = { ...engine, at: 101_000, generationTokensTotal: 2400 };
  now.t = 101_100;
  w.tick();
  engine = { ...engine, at: 101_200, generationTokensTotal: 7 };
  now.t = 101_300;
  w.tick();
  s = await samples();
  assert.equal(out('client_abort'), 25 + 4 + TAIL_CAP_TOKENS);
});
