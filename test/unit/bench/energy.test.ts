/** A bench step's energy and cost per output token (src/bench/energy.ts), on hand-made samples. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { GpuEnergy } from '../../../src/collectors/gpu/energy.js';
import { gpuJoulesBetween, stepEnergy } from '../../../src/bench/energy.js';
import type { GpuSample } from '../../../src/bench/report.js';
import { renderMarkdown } from '../../../src/bench/markdown.js';
import { renderCompare } from '../../../src/bench/compare.js';
import { fakeReport, reportValidator, sample } from './fixture.js';

/** Samples as the monitor keeps them: each power reading through the daemon's counter. */
function readings(points: [t: number, gpu: number, watts: number][]): GpuSample[] {
  const energy = new GpuEnergy();
  return points.map(([t, gpu, watts]) => ({
    t, gpu, utilization: null, memoryUtilization: null, memoryUsedBytes: null, powerWatts: watts,
    energyJoules: energy.observe(gpu, { powerWatts: watts, counterJoules: null }, t * 1000),
  }));
}

const near = (a: number, b: number, what: string) => assert.ok(Math.abs(a - b) < 1e-9 * Math.max(1, Math.abs(b)), `${what}: ${a} vs ${b}`);

test('constant power: joules are watts × seconds for each GPU, boundaries between readings included', () => {
  const s = readings([0, 1, 2, 3, 4, 5].flatMap((t) => [[t, 0, 300], [t, 1, 100]] as [number, number, number][]));
  const e = gpuJoulesBetween(s, 1.25, 3.75)!;
  near(e.joules, 400 * 2.5, 'joules');
  assert.equal(e.gpus, 2);
});

test('a ramp: the trapezoid between readings, the counter interpolated at the step\'s edges, held past the last reading', () => {
  // 100 W at t=0 rising to 300 W at t=2: 400 J by the trapezoid.
  const s = readings([[0, 0, 100], [2, 0, 300]]);
  near(gpuJoulesBetween(s, 0, 2)!.joules, 400, 'whole ramp');
  near(gpuJoulesBetween(s, 0, 1)!.joules, 200, 'half way: constant power over the interval');
  // Past the last reading its power holds: 300 W for one more second.
  near(gpuJoulesBetween(s, 2, 3)!.joules, 300, 'past the last reading');
  assert.equal(gpuJoulesBetween([], 0, 1), null, 'no GPU: no energy');
  const noPower = readings([[0, 0, 100]]).map((x) => ({ ...x, powerWatts: null, energyJoules: null }));
  assert.equal(gpuJoulesBetween(noPower, 0, 1), null, 'no power read: no energy');
});

test('per output token, per good output token, and cost per million output tokens at the daemon\'s prices', () => {
  const gpu = readings([0, 1, 2, 3, 4].map((t) => [t, 0, 360] as [number, number, number]));
  const requests = [
    sample(0, { outputTokens: 100, ttft: 0.05 }),
    sample(1, { outputTokens: 100, ttft: 0.5 }), // misses the TTFT SLO
    sample(2, { outcome: 'upstream_error', status: 500, ttft: null, tpot: null, outputTokens: 0 }),
    sample(3, { outcome: 'stream_error', ttft: 0.05, tpot: null, outputTokens: 40 }), // a partial stream's tokens count, not as good
  ];
  const e = stepEnergy({ from: 0, to: 4 }, gpu, requests, { ttft: 0.1 }, { gpuHourCost: 3.6, energyPrice: 0.25, currency: 'EUR' })!;
  near(e.joules, 1440, 'joules');
  assert.equal(e.outputTokens, 240);
  assert.equal(e.goodOutputTokens, 100);
  near(e.joulesPerOutputToken!, 1440 / 240, 'J/token');
  near(e.joulesPerGoodOutputToken!, 1440 / 100, 'J/good token');
  // 1440 J = 0.0004 kWh at 0.25 + 4 GPU-seconds at 3.6 per hour = 0.0001 + 0.004, over 240 tokens.
  near(e.costPerMillionOutputTokens!, ((0.0004 * 0.25 + 0.004) / 240) * 1e6, 'cost per million');
  assert.equal(e.currency, 'EUR');
  const free = stepEnergy({ from: 0, to: 4 }, gpu, requests, {}, { gpuHourCost: 0, energyPrice: 0, currency: 'USD' })!;
  assert.equal(free.goodOutputTokens, null, 'no SLOs: no good tokens');
  assert.equal(free.joulesPerGoodOutputToken, null);
  assert.equal(free.costPerMillionOutputTokens, null, 'no price: no cost');
  assert.equal(free.currency, null);
});

test('reports: the schema takes steps[].energy, Markdown has the energy table, compare has its rows (a report written before energy has none)', () => {
  const r = fakeReport();
  r.steps.forEach((st, i) => (st.energy = { joules: 1000 * (i + 1), gpus: 1, gpuSeconds: 10, outputTokens: 2432, goodOutputTokens: 1200, joulesPerOutputToken: (1000 * (i + 1)) / 2432, joulesPerGoodOutputToken: (1000 * (i + 1)) / 1200, costPerMillionOutputTokens: 4.5, currency: 'EUR' }));
  const validate = reportValidator();
  assert.ok(validate(JSON.parse(JSON.stringify(r))), JSON.stringify(validate.errors));
  const md = renderMarkdown(r);
  assert.match(md, /\| load \| GPU energy \(J\) \| GPUs \| mean power per GPU \(W\) \| output tokens \| J \/ output token \| J \/ good output token \| cost \/ 1M output tokens \(EUR\) \|/);
  assert.match(md, /^\| 4 req\/s \| 2000 \| 1 \| 200 \| 2432 \| 0\.822 \| 1\.667 \| 4\.500 \|$/m);
  const old = fakeReport();
  const text = renderCompare(old, r, ['before', 'after']);
  assert.match(text, /^\| 4 req\/s J \/ output token \| – \| 0\.822 J\/tok \| – \| – \|$/m);
  assert.match(renderCompare(r, r, ['a', 'b']), /^\| 8 req\/s cost \/ 1M output tokens \(EUR\) \| 4\.500 \| 4\.500 \| \+0\.000 \| \+0\.0% \|$/m);
});
