/**
 * SLO judging against README's definition: "each finished generation request is judged
 * against every configured threshold that applies to its model (`value ≤ threshold` is good,
 * matching Prometheus' `le` buckets); a failed request is bad on every SLO; a client abort is
 * not judged", "a model's own thresholds replace the default ones it names", and a prompt class
 * "covers the prompts up to its bound and above the previous class's". Exact ties at each
 * threshold pin the `≤` (issue 29: `<` passed every unit test before these).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { judge, type Verdict } from '../../../src/slo/judge.js';
import { errorBudget, hasSlos, parseSloConfig, promptClassFor, sloLabel, sloSeries, thresholdsFor, thresholdsInBucketSet } from '../../../src/slo/config.js';
import { UNMEASURED, type RequestRecord } from '../../../src/record/record.js';

function record(over: Partial<RequestRecord>): RequestRecord {
  return {
    ...UNMEASURED, startedAt: 0,
    route: 'chat_completions', operation: 'chat', model: 'm', outcome: 'ok', status: 200, streamed: true,
    ttft: 0.25, ttfo: 0.25, e2e: 1.25, inputTokens: 10, inputTokensKnown: true, outputTokens: 21, tokenSource: 'usage',
    chunkGaps: null, meteringFailure: null, errorType: null, ...over,
  };
}

const byName = (v: Verdict[] | null) => Object.fromEntries((v ?? []).map((x) => [x.slo, x.good]));

// 0.5 s, 0.1 s and 2 s are the thresholds; TPOT = (E2E - TTFT) / (tokens - 1) = (2.5 - 0.5) / 20 = 0.1 exactly in binary64.
const SLOS = parseSloConfig({ default: { ttft: '500ms', ttfo: '500ms', tpot: '100ms', e2e: '2500ms' } }, 'slos');
const TIE = { ttft: 0.5, ttfo: 0.5, e2e: 2.5, outputTokens: 21 };
const ABOVE = (x: number) => x + Number.EPSILON * 4 * Math.max(1, x);

test('a value exactly at its threshold is good (≤, like an le bucket); the next float above is bad', () => {
  assert.equal((2.5 - 0.5) / 20, 0.1, 'the TPOT tie is exact');
  assert.deepEqual(byName(judge(SLOS, 'm', record(TIE))), { ttft: true, ttfo: true, tpot: true, e2e: true });
  assert.deepEqual(byName(judge(SLOS, 'm', record({ ...TIE, ttft: ABOVE(0.5) }))), { ttft: false, ttfo: true, tpot: true, e2e: true });
  assert.deepEqual(byName(judge(SLOS, 'm', record({ ...TIE, ttfo: ABOVE(0.5) }))), { ttft: true, ttfo: false, tpot: true, e2e: true });
  assert.deepEqual(byName(judge(SLOS, 'm', record({ ...TIE, e2e: ABOVE(2.5) }))), { ttft: true, ttfo: true, tpot: false, e2e: false });
  // TPOT alone over: a shorter TTFT with the same E2E stretches the 20 gaps.
  assert.deepEqual(byName(judge(SLOS, 'm', record({ ...TIE, ttft: 0.4, ttfo: 0.4 }))), { ttft: true, ttfo: true, tpot: false, e2e: true });
  // Well under every threshold.
  assert.deepEqual(byName(judge(SLOS, 'm', record({ ttft: 0.1, ttfo: 0.1, e2e: 1.1 }))), { ttft: true, ttfo: true, tpot: true, e2e: true });
});

test('verdicts come in SLO order, each naming its SLO', () => {
  assert.deepEqual(judge(SLOS, 'm', record(TIE)), [
    { slo: 'ttft', name: 'ttft', good: true }, { slo: 'ttfo', name: 'ttfo', good: true },
    { slo: 'tpot', name: 'tpot', good: true }, { slo: 'e2e', name: 'e2e', good: true },
  ]);
});

test('a failed request is bad on every SLO, even one it could not be measured for; an abort or a rejection is not judged', () => {
  for (const outcome of ['upstream_error', 'stream_error', 'upstream_timeout', 'upstream_unreachable', 'worker_lost'] as const) {
    assert.deepEqual(byName(judge(SLOS, 'm', record({ outcome, ttft: -1, ttfo: -1, e2e: 0.01, outputTokens: 0 }))), { ttft: false, ttfo: false, tpot: false, e2e: false }, outcome);
  }
  assert.equal(judge(SLOS, 'm', record({ outcome: 'client_abort' })), null);
  assert.equal(judge(SLOS, 'm', record({ outcome: 'rejected' })), null);
});

test('an SLO the request cannot show is left out (non-streaming: no TTFT, TTFO or TPOT; one token: no TPOT)', () => {
  assert.deepEqual(judge(SLOS, 'm', record({ streamed: false, ttft: -1, ttfo: -1, e2e: 2.5 })), [{ slo: 'e2e', name: 'e2e', good: true }]);
  assert.deepEqual(byName(judge(SLOS, 'm', record({ outputTokens: 1 }))), { ttft: true, ttfo: true, e2e: true });
  // A zero measurement is a measurement (0 ≤ threshold), only a negative one means "not observed".
  assert.deepEqual(byName(judge(SLOS, 'm', record({ ttft: 0, ttfo: 0, e2e: 0, outputTokens: 1 }))), { ttft: true, ttfo: true, e2e: true });
  // Nothing applies at all: null, not an empty list.
  const onlyTtft = parseSloConfig({ default: { ttft: '1s' } }, 'slos');
  assert.equal(judge(onlyTtft, 'm', record({ streamed: false, ttft: -1, ttfo: -1 })), null);
  assert.equal(judge(parseSloConfig({}, 'slos'), 'm', record({})), null);
});

test("a model's own thresholds replace the default ones it names; the rest stay the default's", () => {
  const slos = parseSloConfig({ default: { ttft: '2s', tpot: '100ms', e2e: '60s' }, models: { big: { ttft: '4s', tpot: '150ms' } } }, 'slos');
  assert.deepEqual(thresholdsFor(slos, 'big'), { ttft: 4, tpot: 0.15, e2e: 60 });
  assert.deepEqual(thresholdsFor(slos, 'small'), { ttft: 2, tpot: 0.1, e2e: 60 });
  const r = record({ ttft: 3, ttfo: 3, e2e: 3 + 20 * 0.12, outputTokens: 21 });
  assert.deepEqual(byName(judge(slos, 'big', r)), { ttft: true, tpot: true, e2e: true });
  assert.deepEqual(byName(judge(slos, 'small', r)), { ttft: false, tpot: false, e2e: true });
  assert.deepEqual(thresholdsFor(slos, 'small'), { ttft: 2, tpot: 0.1, e2e: 60 }, 'judging does not change the default');
});

test('prompt classes: up to the bound (inclusive) and above the previous one; unknown prompts keep the model thresholds', () => {
  const slos = parseSloConfig({ default: { ttft: '2s', tpot: '100ms' }, prompt_classes: [{ prompt_tokens_le: 100, ttft: '250ms' }, { prompt_tokens_le: 4096, ttft: '500ms' }] }, 'slos');
  assert.equal(promptClassFor(slos, 100)?.promptTokensLe, 100, 'the bound itself is in the class');
  assert.equal(promptClassFor(slos, 101)?.promptTokensLe, 4096);
  assert.equal(promptClassFor(slos, 0)?.promptTokensLe, 100);
  assert.equal(promptClassFor(slos, 4096)?.promptTokensLe, 4096);
  assert.equal(promptClassFor(slos, 4097), null);

  const at = (inputTokens: number, ttft: number, known = true) => judge(slos, 'm', record({ inputTokens, inputTokensKnown: known, ttft, ttfo: ttft, e2e: ttft + 2, outputTokens: 21 }));
  // A class threshold is judged under its own label and replaces the model's ttft; tpot stays the model's.
  assert.deepEqual(at(100, 0.25), [{ slo: 'ttft_prompt_le_100', name: 'ttft', good: true }, { slo: 'tpot', name: 'tpot', good: true }]);
  assert.deepEqual(byName(at(100, ABOVE(0.25))), { ttft_prompt_le_100: false, tpot: true });
  assert.deepEqual(byName(at(4096, 0.5)), { ttft_prompt_le_4096: true, tpot: true });
  assert.deepEqual(byName(at(4096, 0.6)), { ttft_prompt_le_4096: false, tpot: true });
  assert.deepEqual(byName(at(4097, 0.6)), { ttft: true, tpot: true }, 'past the last bound: the model thresholds');
  assert.deepEqual(byName(at(50, 0.6, false)), { ttft: true, tpot: true }, 'prompt size unknown: the model thresholds');
  // A failed request in a class is bad under the class label.
  assert.deepEqual(judge(slos, 'm', record({ outcome: 'upstream_error', inputTokens: 10 })), [{ slo: 'ttft_prompt_le_100', name: 'ttft', good: false }, { slo: 'tpot', name: 'tpot', good: false }]);
});

test('SLO labels, series and the thresholds that become bucket boundaries', () => {
  assert.equal(sloLabel('ttft', null), 'ttft');
  assert.equal(sloLabel('tpot', 4096), 'tpot_prompt_le_4096');
  const slos = parseSloConfig({
    default: { ttft: '2s', e2e: '60s' }, models: { big: { ttft: '4s', tpot: '150ms' } },
    prompt_classes: [{ prompt_tokens_le: 4096, ttft: '500ms', ttfo: '700ms' }],
  }, 'slos');
  assert.deepEqual(sloSeries(slos).map((s) => s.label), ['ttft', 'tpot', 'e2e', 'ttft_prompt_le_4096', 'ttfo_prompt_le_4096']);
  assert.deepEqual(sloSeries(slos)[3], { label: 'ttft_prompt_le_4096', slo: 'ttft', promptTokensLe: 4096 });
  // TTFT and TTFO thresholds bound the TTFT histograms (and the by-prompt one), TPOT's the TPOT ones, E2E's the E2E one.
  assert.deepEqual(thresholdsInBucketSet(slos, 'ttft'), [2, 4, 0.5, 0.7]);
  assert.deepEqual(thresholdsInBucketSet(slos, 'ttft_by_prompt'), [2, 4, 0.5, 0.7]);
  assert.deepEqual(thresholdsInBucketSet(slos, 'tpot'), [0.15]);
  assert.deepEqual(thresholdsInBucketSet(slos, 'tpot_by_concurrency'), [0.15]);
  assert.deepEqual(thresholdsInBucketSet(slos, 'e2e'), [60]);
  assert.deepEqual(thresholdsInBucketSet(slos, 'chunk'), []);
  assert.equal(hasSlos(slos), true);
  assert.equal(hasSlos(parseSloConfig({}, 'slos')), false);
  assert.equal(hasSlos(parseSloConfig({ models: { a: { e2e: '1s' } } }, 'slos')), true);
  assert.equal(hasSlos(parseSloConfig({ default: { e2e: '1s' } }, 'slos')), true);
  assert.equal(hasSlos(parseSloConfig({ prompt_classes: [{ prompt_tokens_le: 10, ttft: '1s' }] }, 'slos')), true);
});

test('the SLO config: defaults, and each bad value named by its path', () => {
  assert.deepEqual(parseSloConfig(undefined, 'slos'), { objective: 0.99, window: '30d', default: {}, models: {}, promptClasses: [] });
  const bad = (raw: unknown, path: string, message: RegExp) =>
    assert.throws(() => parseSloConfig(raw, 'cfg.slos'), (e: Error) => e.message.includes(path) && message.test(e.message), path);
  bad({ objective: 1 }, 'cfg.slos.objective', /1/);
  bad({ objective: 0 }, 'cfg.slos.objective', /0/);
  assert.equal(parseSloConfig({ objective: 0.999 }, 's').objective, 0.999);
  bad({ window: '30m' }, 'cfg.slos.window', /30d, 7d or 4w/);
  bad({ window: 'x30d' }, 'cfg.slos.window', /30d/);
  bad({ window: '30dx' }, 'cfg.slos.window', /30d/);
  assert.equal(parseSloConfig({ window: '4w' }, 's').window, '4w');
  bad({ default: { ttft: '0s' } }, 'cfg.slos.default.ttft', /greater than 0/);
  bad({ default: { ttft: 'soon' } }, 'cfg.slos.default.ttft', /soon/);
  bad({ default: { latency: '1s' } }, 'cfg.slos.default', /latency/);
  bad({ prompt_classes: [{ prompt_tokens_le: 100 }, { prompt_tokens_le: 100 }] }, 'cfg.slos.prompt_classes.1.prompt_tokens_le', /strictly ascending/);
  bad({ prompt_classes: [{ prompt_tokens_le: 200 }, { prompt_tokens_le: 100 }] }, 'cfg.slos.prompt_classes.1.prompt_tokens_le', /strictly ascending/);
  assert.equal(parseSloConfig({ default: { ttft: 1.5 } }, 's').default.ttft, 1.5, 'a number is seconds');
  // Not an object at all: the error names the section itself.
  assert.throws(() => parseSloConfig('fast', 'cfg.slos'), (e: Error) => e.message.startsWith('cfg.slos: '), 'cfg.slos');
});

test('the error budget is 1 - objective, without float noise', () => {
  assert.equal(errorBudget(parseSloConfig({ objective: 0.99 }, 's')), 0.01);
  assert.equal(errorBudget(parseSloConfig({ objective: 0.999 }, 's')), 0.001);
  assert.equal(errorBudget(parseSloConfig({ objective: 0.5 }, 's')), 0.5);
});
