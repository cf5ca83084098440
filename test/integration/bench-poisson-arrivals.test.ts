// test-group: alone (arrival times are checked against the schedule)
/**
 * README and docs/bench.md: `infermeter bench` load steps are open loop at `--qps` with
 * Poisson (the default) or constant arrivals, whatever the server's speed. A few seconds
 * against the simulator: the simulator receives about rate × duration requests, and the
 * gaps between sends look exponential (coefficient of variation near 1, Kolmogorov–Smirnov
 * distance to Exp(rate) small); the constant mode, on the same run length, does not.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startSimulator, type Simulator } from '../../src/sim/index.js';
import { runBench } from '../../src/bench/run.js';
import type { StepReport } from '../../src/bench/report.js';
import { benchOptions } from './bench-helpers.js';

const RATE = 40; // requests per second asked
const SECONDS = 3;

/** Runs one open-loop step; returns it and the generation requests the simulator received. */
async function step(sim: Simulator, arrivals: 'poisson' | 'constant'): Promise<{ step: StepReport; received: number }> {
  const before = sim.state().requests;
  const report = await runBench(benchOptions(sim.url, { warmup: 0, requests: 0, qps: [RATE], durationSeconds: SECONDS, arrivals, outputTokens: 4, inputTokens: 50 }));
  return { step: report.steps[0]!, received: sim.state().requests - before };
}

function gaps(s: StepReport): number[] {
  const starts = s.requests.map((r) => r.start).sort((a, b) => a - b);
  return starts.slice(1).map((t, i) => t - starts[i]!);
}

function cv(xs: number[]): number {
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  const variance = xs.reduce((a, b) => a + (b - mean) ** 2, 0) / (xs.length - 1);
  return Math.sqrt(variance) / mean;
}

/** Largest distance between the gaps' empirical CDF and Exp(rate)'s CDF. */
function ksDistance(xs: number[], rate: number): number {
  const sorted = [...xs].sort((a, b) => a - b);
  let d = 0;
  sorted.forEach((x, i) => {
    const f = 1 - Math.exp(-rate * x);
    d = Math.max(d, Math.abs(f - i / sorted.length), Math.abs(f - (i + 1) / sorted.length));
  });
  return d;
}

test('bench --arrivals poisson sends about --qps requests per second with exponential gaps', { timeout: 60_000 }, async (t) => {
  const sim = await startSimulator({ listen: '127.0.0.1:0', decodeStepMs: 2, maxNumSeqs: 256 });
  try {
    const { step: poisson, received } = await step(sim, 'poisson');
    // Count: a Poisson process of rate λ over T seconds sends N ~ Poisson(λT): mean 120, standard
    // deviation √120 ≈ 11. ±4 standard deviations (76..164) fails a correct generator about
    // once in 16 000 seeds, and fails a generator at half or twice the rate (60 or 240 expected).
    const expected = RATE * SECONDS;
    const tolerance = 4 * Math.sqrt(expected);
    assert.ok(Math.abs(poisson.requests.length - expected) <= tolerance, `${poisson.requests.length} sent, expected ${expected} ± ${tolerance.toFixed(0)}`);
    assert.equal(received, poisson.requests.length, 'the simulator received every request the bench reports');
    assert.ok(poisson.requests.every((r) => r.outcome === 'ok'), 'every request ok');
    t.diagnostic(`sent ${poisson.requests.length}, received ${received}`);

    // Gaps: exponential gaps have CV 1; for 120 gaps the sample CV's spread is about 0.09
    // (simulated: 20 000 runs of 120 Exp draws, 0.26% outside 0.7..1.3). Constant gaps have
    // CV ≈ 0 (timer jitter only).
    const g = gaps(poisson);
    const c = cv(g);
    assert.ok(c > 0.7 && c < 1.3, `coefficient of variation of the gaps ${c.toFixed(2)}, expected about 1`);
    // Kolmogorov–Smirnov against Exp(λ) with λ the asked rate (not fitted, so the plain KS
    // table applies): the 0.1% critical value is 1.95/√n (≈ 0.18 for 120 gaps).
    const d = ksDistance(g, RATE);
    const critical = 1.95 / Math.sqrt(g.length);
    t.diagnostic(`gaps ${g.length}, CV ${c.toFixed(3)}, KS ${d.toFixed(3)} < ${critical.toFixed(3)}`);
    assert.ok(d < critical, `KS distance to Exp(${RATE}) ${d.toFixed(3)}, critical ${critical.toFixed(3)}`);

    // The same measure tells constant arrivals apart: same count, gaps nearly equal.
    const { step: constant } = await step(sim, 'constant');
    assert.ok(Math.abs(constant.requests.length - expected) <= 2, `${constant.requests.length} constant arrivals, expected ${expected}`);
    assert.ok(cv(gaps(constant)) < 0.3, `constant arrivals CV ${cv(gaps(constant)).toFixed(2)}`);
  } finally {
    await sim.close();
  }
});
