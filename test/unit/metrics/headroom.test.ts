/**
 * The headroom model (src/metrics/headroom/): its queues against queueing theory, the
 * observation against hand-made requests, every `unknown` reason, the slot-limit rule, the
 * bench calibration, and the estimate against a noise-free continuous-batching engine in
 * virtual time (headroom-engine.ts), whose knee is exact: the error is printed and held to
 * the bound docs/headroom.md states.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Draws, multiServerWaits, singleServerWaits, waitAt } from '../../../src/metrics/headroom/queue.js';
import { fitPlane, observe, type HeadroomRequest } from '../../../src/metrics/headroom/observe.js';
import { mulberry32 } from '../../../src/lib/prng.js';
import { estimateCapacity, MAX_SCALE, type Thresholds } from '../../../src/metrics/headroom/estimate.js';
import { LimitHistory, SLOT_SIGHTINGS } from '../../../src/metrics/headroom/limits.js';
import { calibrate } from '../../../src/metrics/headroom/bench.js';
import type { MachineState } from '../../../src/collectors/snapshot.js';
import { p99s, runEngine, type EngineShape, type Mix } from './headroom-engine.js';

test('the single-server queue matches M/M/1: P99 wait ln(100ρ)/(μ(1−ρ)); none past saturation; waits grow with the rate', () => {
  const draws = new Draws();
  const service = Array.from({ length: 2000 }, (_, i) => -Math.log(1 - (i + 0.5) / 2000) * 0.1); // exponential, mean 0.1 s
  for (const rho of [0.5, 0.7, 0.85]) {
    const w = singleServerWaits(draws, rho / 0.1, service, 1)!;
    const exact = Math.log(100 * rho) / (10 * (1 - rho));
    assert.ok(Math.abs(waitAt(w, 0.99) / exact - 1) < 0.2, `ρ ${rho}: P99 ${waitAt(w, 0.99)} vs ${exact}`);
  }
  assert.equal(singleServerWaits(draws, 10.5, service, 1), null);
  let last = 0;
  for (const rate of [2, 4, 6, 8, 9]) {
    const p = waitAt(singleServerWaits(draws, rate, service, 1)!, 0.99);
    assert.ok(p >= last);
    last = p;
  }
});

test('the multi-server queue matches Erlang C: P(wait) for M/M/4 at 75 %', () => {
  const service = Array.from({ length: 2000 }, (_, i) => -Math.log(1 - (i + 0.5) / 2000));
  const w = multiServerWaits(new Draws(), 3, service, 1, 4)!;
  const waited = Array.from(w).filter((x) => x > 1e-9).length / w.length;
  // Erlang C for c = 4, a = 3: 0.509.
  assert.ok(Math.abs(waited - 0.509) < 0.08, `P(wait) ${waited}`);
  assert.equal(multiServerWaits(new Draws(), 4.1, service, 1, 4), null);
});

test('observe: each request\'s mean decode batch from the records, and its TTFT split into queue and service', () => {
  const r = (start: number, ttft: number, e2e: number): HeadroomRequest => ({ start, ttft, e2e, inputTokens: 10, outputTokens: 11 });
  // A decodes 1000-3000 ms; B 2000-4000 ms (first token at 2000, after A's at 1000); C alone 10000-11000.
  const reqs = [r(0, 1, 3), r(500, 1.5, 3.5), r(10_000, 0.5, 1.5)];
  const o = observe(reqs, -10_000, 30_000);
  const [a, b, c] = o.usable;
  assert.equal(a!.batch, 1.5, 'alone half its decode, with B the other half');
  assert.equal(b!.batch, 1.5);
  assert.equal(c!.batch, 1);
  assert.equal(b!.wait, 0.5, 'B waited from 500 until A\'s first token at 1000');
  assert.equal(b!.service, 1);
  assert.equal(a!.tpot, 0.2);
  // Too close to either end of the window: left out (what they overlapped is not all known).
  assert.equal(observe(reqs, 0, 12_000).usable.length, 0);
});

const DECODE: EngineShape = { baseMs: 20, perSeqMs: 2, prefillTps: 20_000, budget: 4096, maxSeqs: 512 };
const DECODE_MIX: Mix = { prompt: [16, 64], output: [32, 96] };
const limits: { slots: number | null; kvSequences: number | null } = { slots: null, kvSequences: null };

function estimateAt(shape: EngineShape, mix: Mix, rate: number, thresholds: Thresholds, n = 1500, lim = limits) {
  const reqs = runEngine(shape, mix, rate, n, 3);
  const from = Math.min(...reqs.map((r) => r.start));
  const to = Math.max(...reqs.map((r) => r.start + r.e2e * 1000));
  return estimateCapacity({ observation: observe(reqs, from, to), requestsPerSecond: n / ((to - from) / 1000), thresholds, objective: 0.99, limits: lim });
}

test('unknown, and why: no SLO, no load, too few requests, load that never varied, a limit out of reach', () => {
  assert.equal(estimateAt(DECODE, DECODE_MIX, 2, {}).reason, 'no_slo');
  const none = estimateCapacity({ observation: observe([], 0, 60_000), requestsPerSecond: 0, thresholds: { tpot: 0.06 }, objective: 0.99, limits });
  assert.equal(none.reason, 'no_load');
  assert.equal(none.requestsPerSecond, null);
  assert.equal(estimateAt(DECODE, DECODE_MIX, 2, { tpot: 0.06 }, 20).reason, 'too_few_requests');
  // Closed loop: 8 identical requests always in flight, each replaced as it ends: the batch never varies.
  const closed: HeadroomRequest[] = [];
  for (let k = 0; k < 60; k++) for (let j = 0; j < 8; j++) closed.push({ start: k * 2000, ttft: 0.05, e2e: 2, inputTokens: 20, outputTokens: 51 });
  const flat = estimateCapacity({ observation: observe(closed, 0, 122_000), requestsPerSecond: 4, thresholds: { tpot: 0.06 }, objective: 0.99, limits });
  assert.equal(flat.reason, 'load_not_varied', flat.summary);
  assert.equal(flat.state, 'unknown');
  const far = estimateAt(DECODE, DECODE_MIX, 0.2, { tpot: 10 });
  assert.equal(far.reason, 'beyond_reach');
  assert.match(far.summary, new RegExp(`${MAX_SCALE}×`));
});

/** The rate where the engine's first P99 breaks, by bisection on runs of the engine itself. */
function kneeOf(shape: EngineShape, mix: Mix, thresholds: Thresholds, lo: number, hi: number): number {
  const broke = (rate: number) => {
    const p = p99s(runEngine(shape, mix, rate, 4000, 9));
    return (Object.keys(thresholds) as (keyof Thresholds)[]).some((k) => p[k] > thresholds[k]!);
  };
  for (let i = 0; i < 14; i++) {
    const mid = Math.sqrt(lo * hi);
    if (broke(mid)) hi = mid;
    else lo = mid;
  }
  return Math.sqrt(lo * hi);
}

const REGIMES: { name: string; shape: EngineShape; mix: Mix; slos: Thresholds; range: [number, number]; limit: string; bound: number; lim?: typeof limits }[] = [
  { name: 'decode-bound', shape: DECODE, mix: DECODE_MIX, slos: { tpot: 0.06, ttft: 1 }, range: [1, 20], limit: 'decode', bound: 0.2 },
  { name: 'prefill-bound', shape: { baseMs: 20, perSeqMs: 0.5, prefillTps: 4000, budget: 512, maxSeqs: 512 }, mix: { prompt: [1500, 2500], output: [16, 32] }, slos: { ttft: 2.5, tpot: 0.5 }, range: [0.2, 5], limit: 'prefill', bound: 0.2 },
  { name: 'slot-bound (8 sequences)', shape: { ...DECODE, perSeqMs: 0.5, maxSeqs: 8 }, mix: DECODE_MIX, slos: { ttft: 1, tpot: 0.1 }, range: [0.5, 20], limit: 'queue', bound: 0.2, lim: { slots: 8, kvSequences: null } },
];

for (const r of REGIMES) {
  test(`${r.name} engine in virtual time: the estimate at 50 % and 70 % of the knee is within ±${r.bound * 100} % and names ${r.limit}`, () => {
    const knee = kneeOf(r.shape, r.mix, r.slos, ...r.range);
    for (const share of [0.3, 0.5, 0.7]) {
      const est = estimateAt(r.shape, r.mix, knee * share, r.slos, 1500, r.lim ?? limits);
      const err = est.requestsPerSecond === null ? null : est.requestsPerSecond / knee - 1;
      console.log(`# ${r.name}: knee ${knee.toFixed(3)} req/s; at ${share * 100} %: estimate ${est.requestsPerSecond} (${err === null ? est.reason : `${(err * 100).toFixed(1)} %`}), ${est.bindingSlo}/${est.bindingLimit}`);
      if (share < 0.5) continue;
      assert.equal(est.state, 'estimate', est.summary);
      assert.ok(Math.abs(err!) <= r.bound, `${r.name} at ${share}: ${est.requestsPerSecond} vs knee ${knee}`);
      assert.equal(est.bindingLimit, r.limit, est.summary);
      assert.ok(Math.abs(est.loadRatio! - share * knee / est.requestsPerSecond!) < 0.05 * est.loadRatio!);
    }
  });
}

const machine = (running: number, waiting: number, kv: number, at: number, promptTokensTotal: number | null = null) =>
  ({ gpus: [], engines: [{ upstream: 'u', engine: 'vllm', running, waiting, kvCacheUsage: kv, promptTokensTotal, at }], gpuEngines: null, host: null, process: null, proxyLoop: null, collectors: [] }) as unknown as MachineState;

test('a slot limit once read holds from poll to poll until the engine changes: a larger batch, or a restart (issue 45, item 5)', () => {
  const h = new LimitHistory();
  let at = 0;
  const read = (r: number, w: number, prompts: number | null = null) => h.add(machine(r, w, 0.3, ++at, prompts), [], 0);
  for (let i = 0; i < 3; i++) read(8, 2, 1000 * at);
  assert.equal(h.limits().slots, 8);
  // Requests waiting for their step below the limit, poll after poll: the share of queued readings
  // at 8 falls under half, which the limit read does not undo (it flipped to null here before).
  const polls: (number | null)[] = [];
  for (let i = 0; i < 6; i++) {
    read(5, 1, 1000 * at);
    polls.push(h.limits().slots);
  }
  assert.deepEqual(polls, [8, 8, 8, 8, 8, 8]);
  // The engine restarts (its prompt-token counter goes back): what was read of it is gone.
  read(2, 0, 10);
  assert.equal(h.limits().slots, null);
  for (let i = 0; i < 3; i++) read(8, 2, 20 + at);
  assert.equal(h.limits().slots, 8);
  // It runs 9: 8 was no limit.
  read(9, 0, 30 + at);
  assert.equal(h.limits().slots, null);
});

test(`the slot limit: the largest batch, read with requests waiting and KV room ${SLOT_SIGHTINGS} times and where most queues are; KV sequences = running / usage`, () => {
  const h = new LimitHistory();
  // Requests waiting for the next step at a batch of 5, 6 and 7: not a limit.
  [[5, 1], [6, 1], [7, 1], [7, 0]].forEach(([r, w], i) => h.add(machine(r!, w!, 0.2, i + 1), [], 0));
  assert.equal(h.limits().slots, null);
  [[8, 2], [8, 3], [8, 1]].forEach(([r, w], i) => h.add(machine(r!, w!, 0.3, 10 + i), [], 0));
  assert.equal(h.limits().slots, 8);
  // Waiting with the cache full is the KV cache's limit, not the slots'.
  const kv = new LimitHistory();
  [1, 2, 3, 4].forEach((i) => kv.add(machine(10, 4, 0.95, i), [], 0));
  assert.equal(kv.limits().slots, null);
  assert.ok(Math.abs(kv.limits().kvSequences! - 10 / 0.95) < 1e-9);
  // A prefill-bound engine: requests queue for the step's token budget at every batch size; its
  // largest batch, though seen with a queue three times, is no slot limit.
  const prefill = new LimitHistory();
  [[2, 3], [4, 2], [3, 4], [1, 5], [4, 3], [2, 2], [3, 3], [4, 2], [1, 3], [2, 4]].forEach(([r, w], i) => prefill.add(machine(r!, w!, 0.3, i + 1), [], 0));
  assert.equal(prefill.limits().slots, null);
  // Then a burst reaches a new largest batch with its queue: still no limit (most queues were below it).
  [[6, 3], [6, 4], [6, 2]].forEach(([r, w], i) => prefill.add(machine(r!, w!, 0.3, 20 + i), [], 0));
  assert.equal(prefill.limits().slots, null);
  // The slot-bound engine above, a request waiting for its step below the limit now and then: still 8.
  [[3, 1], [8, 2], [8, 3], [6, 1], [8, 1]].forEach(([r, w], i) => h.add(machine(r!, w!, 0.3, 20 + i), [], 0));
  assert.equal(h.limits().slots, 8);
  // A reading already seen (same scrape time) is not counted twice.
  const again = new LimitHistory();
  for (let i = 0; i < 5; i++) again.add(machine(8, 2, 0.3, 1), [], 0);
  assert.equal(again.limits().slots, null);
});

test('a bench of this server calibrates the estimate at the same mix, and only there', () => {
  const est = estimateAt(DECODE, DECODE_MIX, 4, { tpot: 0.06 });
  assert.equal(est.state, 'estimate');
  const reqs = runEngine(DECODE, DECODE_MIX, 4, 300, 3);
  const mean = (f: (r: HeadroomRequest) => number) => reqs.reduce((a, r) => a + f(r), 0) / reqs.length;
  const bench = { requestsPerSecond: 7.5, step: 'step 4 (8 req/s)', promptTokens: mean((r) => r.inputTokens), outputTokens: mean((r) => r.outputTokens), slo: 'tpot', kind: 'decode' };
  const same = calibrate(est, bench, reqs);
  assert.equal(same.requestsPerSecond, 7.5);
  assert.ok(same.evidence.some((e) => e.name === 'modelCapacity' && e.value === est.requestsPerSecond));
  const other = calibrate(est, { ...bench, promptTokens: 2000 }, reqs);
  assert.equal(other.requestsPerSecond, est.requestsPerSecond);
  assert.match(other.evidence.find((e) => e.name === 'benchCapacity')!.basis!, /not used/);
  // A load that never varied is settled by the bench, which did vary it.
  const settled = calibrate({ ...est, state: 'unknown', requestsPerSecond: null, loadRatio: null, reason: 'load_not_varied' }, bench, reqs);
  assert.equal(settled.state, 'estimate');
  assert.equal(settled.bindingSlo, est.bindingSlo);
});

test('where a limit saturates before any threshold is reached, that limit binds (not the batch slots by default)', () => {
  // Thresholds no steady state reaches: only saturation (a queue that never settles) breaks them.
  // Prompt chunks share each step with the decode batch. Before TPOT had the prefill share as a
  // second regressor (issue 45, item 5), that slowdown read as batch growth and the decode batch
  // saturated first, named decode. The prefill line saturates first: each step takes 512 prompt
  // tokens (128 ms at 4000 tokens/s) beside 20 ms of decode, 3,459 prompt tokens/s, 1.73 req/s of
  // 2000-token prompts: prefill, shown in TTFT.
  const prefill = estimateAt({ baseMs: 20, perSeqMs: 0.5, prefillTps: 4000, budget: 512, maxSeqs: 512 }, { prompt: [1500, 2500], output: [16, 32] }, 0.5, { ttft: 1000, tpot: 1000 });
  assert.equal(prefill.state, 'estimate', prefill.summary);
  assert.equal(prefill.bindingLimit, 'prefill', prefill.summary);
  assert.equal(prefill.bindingSlo, 'ttft', prefill.summary);
  const saturation = 512 / (0.020 + 512 / 4000) / 2000;
  assert.ok(Math.abs(prefill.requestsPerSecond! / saturation - 1) < 0.15, `${prefill.requestsPerSecond} req/s against the prefill line's ${saturation.toFixed(3)}`);
  const slots = estimateAt({ ...DECODE, perSeqMs: 0.5, maxSeqs: 8 }, DECODE_MIX, 4, { ttft: 1000, tpot: 1000 }, 1500, { slots: 8, kvSequences: null });
  assert.equal(slots.bindingLimit, 'queue', slots.summary);
  assert.equal(slots.bindingSlo, 'ttft', slots.summary);
  const kv = estimateAt({ ...DECODE, perSeqMs: 0.5, maxSeqs: 8 }, DECODE_MIX, 4, { ttft: 1000, tpot: 1000 }, 1500, { slots: null, kvSequences: 8 });
  assert.equal(kv.bindingLimit, 'kv_cache', kv.summary);
});

test('fitPlane recovers TPOT = base + slope · batch + perShare · share, and ignores a stalled step', () => {
  const rand = mulberry32(5);
  const xs: number[] = [];
  const zs: number[] = [];
  const ys: number[] = [];
  for (let i = 0; i < 200; i++) {
    const x = 1 + 7 * rand();
    // The share rises with the batch (more in flight, more prompts): the collinearity that fooled one regressor.
    const z = Math.min(1, Math.max(0, 0.1 * x + 0.3 * (rand() - 0.5)));
    xs.push(x);
    zs.push(z);
    ys.push(0.03 + 0.002 * x + 0.09 * z + 0.001 * (rand() - 0.5) + (i === 7 ? 2 : 0));
  }
  const p = fitPlane(xs, zs, ys)!;
  assert.ok(Math.abs(p.intercept - 0.03) < 0.002 && Math.abs(p.slope - 0.002) < 0.0003 && Math.abs(p.perShare - 0.09) < 0.003, JSON.stringify(p));
  assert.ok(p.perShare > 10 * p.perShareError);
  assert.equal(fitPlane(xs.slice(0, 5), zs.slice(0, 5), ys.slice(0, 5)), null, 'under 10 points');
  assert.equal(fitPlane(xs, xs.map((x) => 2 * x), ys), null, 'collinear');
});
