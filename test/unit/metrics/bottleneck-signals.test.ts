/**
 * Two signals of the bottleneck verdict computed from raw figures by the definitions of
 * docs/bottleneck.md's signal table (src/metrics/bottleneck/signals.ts), never set by hand:
 * latencyOverTarget ("the larger of ttftOverTarget and tpotOverTarget"), live (modelSignals)
 * and in bench (stepSignals); gpuSmClockRatio ("lowest GPU's mean SM clock / the highest SM
 * clock that GPU reached while busy") from machine readings, and the gpu_throttle rule's clock
 * alternative it feeds, at its entry and exit thresholds.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { classify, judgeOnce } from '../../../src/metrics/bottleneck/judge.js';
import { modelSignals } from '../../../src/metrics/bottleneck/live.js';
import { MachineHistory, type GpuSample, type MachineSample } from '../../../src/metrics/bottleneck/machine.js';
import { emptySignals, type SignalName, type Signals } from '../../../src/metrics/bottleneck/signals.js';
import { stepSignals } from '../../../src/bench/analysis.js';
import { fakeReport } from '../bench/fixture.js';

/** The q quantile as docs/bottleneck.md defines it: the smallest value with at least q of the values at or below it. */
function orderStatistic(xs: number[], q: number): number {
  const sorted = [...xs].sort((a, b) => a - b);
  for (const v of sorted) if (sorted.filter((x) => x <= v).length >= q * sorted.length) return v;
  throw new Error('empty');
}

/** A healthy model on an engine with room: every signal measured, nothing near a threshold. */
function healthy(): Signals {
  const s = emptySignals(30, 'vllm');
  Object.assign(s.values, {
    requests: 60, requestsPerSecond: 2, failureRatio: 0, ttftP50: 0.06, ttftP99: 0.09, ttftOverTarget: 0.09, tpotP50: 0.04, tpotOverTarget: 0.5,
    latencyOverTarget: 0.5, tpotFloor: 0.04, tpotGrowth: 1, sloAttainment: 1, engineWaiting: 0, engineRunning: 3, kvCacheUsage: 0.05, kvCacheUsageMax: 0.07,
    preemptionsPerSecond: 0, queueTimeMean: 0.001, queueShare: 0.02, prefillShare: 0.7, gpuUtilization: 0.9, gpuPowerViolation: 0, gpuThermalViolation: 0,
    gpuSmClockRatio: 1, gpuDramActive: 0.2, proxyLoopDelayP99: 0.002, proxyLagShare: 0.03,
  } satisfies Partial<Record<SignalName, number>>);
  return s;
}

test('latencyOverTarget is the larger of the TTFT and TPOT ratios, whichever of the two is over (live signals)', () => {
  // 100 TTFTs 0.01 .. 1.00 s: P99 is 0.99 s; 100 TPOTs of 30 ms.
  const ttft = Array.from({ length: 100 }, (_, i) => (i + 1) / 100);
  const tpot = Array.from({ length: 100 }, () => 0.03);
  const st = { requests: 100, failed: 0, ttft, tpot, tpotAlone: [], concurrencyMean: 1, sloAttainment: null };
  const cases: [targets: { ttft?: number; tpot?: number }, ttftRatio: number, tpotRatio: number][] = [
    [{ ttft: 0.5, tpot: 0.1 }, orderStatistic(ttft, 0.99) / 0.5, 0.03 / 0.1], // TTFT over (1.98), TPOT within (0.3)
    [{ ttft: 4, tpot: 0.02 }, orderStatistic(ttft, 0.99) / 4, 0.03 / 0.02], // TTFT within (0.2475), TPOT over (1.5)
    [{}, orderStatistic(ttft, 0.99) / 1, 0.03 / 0.1], // README's fallback targets: 1 s and 100 ms
  ];
  for (const [targets, ttftRatio, tpotRatio] of cases) {
    const v = modelSignals(st, targets, null, 30, 'vllm').values;
    assert.ok(Math.abs(v.ttftOverTarget! - ttftRatio) < 1e-12, `ttftOverTarget ${v.ttftOverTarget} for ${JSON.stringify(targets)}`);
    assert.ok(Math.abs(v.tpotOverTarget! - tpotRatio) < 1e-12, `tpotOverTarget ${v.tpotOverTarget} for ${JSON.stringify(targets)}`);
    assert.ok(Math.abs(v.latencyOverTarget! - Math.max(ttftRatio, tpotRatio)) < 1e-12, `latencyOverTarget ${v.latencyOverTarget} for ${JSON.stringify(targets)}`);
  }
  // What it decides: with TPOT 1.5 times its target, the model is not meeting its targets (not `none`).
  const s = healthy();
  const live = modelSignals(st, { ttft: 4, tpot: 0.02 }, null, 30, 'vllm').values;
  Object.assign(s.values, { ttftOverTarget: live.ttftOverTarget, tpotOverTarget: live.tpotOverTarget, latencyOverTarget: live.latencyOverTarget });
  assert.notEqual(judgeOnce(s, 0).kind, 'none');
});

test('latencyOverTarget in bench: the larger of the step\'s TTFT and TPOT P99 over the --slo targets', () => {
  const r = fakeReport();
  r.config['slo'] = { ttft: 0.5, tpot: 0.05 };
  const st = r.steps[0]!;
  for (const [ttftP99, tpotP99] of [[0.2, 0.1], [2, 0.01]] as const) {
    st.summary.ttft.p99 = ttftP99;
    st.summary.tpot.p99 = tpotP99;
    const v = stepSignals(st, r).values;
    assert.ok(Math.abs(v.latencyOverTarget! - Math.max(ttftP99 / 0.5, tpotP99 / 0.05)) < 1e-12, `TTFT P99 ${ttftP99}, TPOT P99 ${tpotP99}: ${v.latencyOverTarget}`);
  }
});

const GHZ = 1e9;
const gpu = (utilization: number, smClockHz: number): GpuSample => ({ utilization, powerViolation: 0, thermalViolation: 0, smClockHz, dramActive: null });
const reading = (at: number, gpus: [string, GpuSample][]): MachineSample => ({ at, engines: new Map(), gpus: new Map(gpus), gpuUpstreams: new Map(), proxyLoopDelayP99: null });

test('gpuSmClockRatio is the lowest GPU\'s mean SM clock over its busy peak; an idle GPU has no peak and no say', () => {
  const h = new MachineHistory();
  // GPU 0 busy at 1.98 GHz throughout; GPU 1 busy at 1.98 GHz, then at 0.99 GHz still busy; GPU 2 idle at 0.3 GHz.
  h.add(reading(0, [['0', gpu(0.9, 1.98 * GHZ)], ['1', gpu(0.9, 1.98 * GHZ)], ['2', gpu(0.1, 0.3 * GHZ)]]), -Infinity);
  h.add(reading(10_000, [['0', gpu(0.9, 1.98 * GHZ)], ['1', gpu(0.9, 0.99 * GHZ)], ['2', gpu(0.1, 0.3 * GHZ)]]), -Infinity);
  const v = h.signals(1).values;
  const ratios = [(1.98 + 1.98) / 2 / 1.98, (1.98 + 0.99) / 2 / 1.98]; // GPU 0: 1, GPU 1: 0.75
  assert.ok(Math.abs(v.gpuSmClockRatio! - Math.min(...ratios)) < 1e-12, `gpuSmClockRatio ${v.gpuSmClockRatio}`);
  assert.ok(Math.abs(v.gpuUtilization! - (0.9 + 0.9 + 0.1) / 3) < 1e-12, 'the mean over GPUs');

  // The rule's clock alternative: throttled clock, busy GPU, latency over target, and no violation flag set.
  const s = healthy();
  Object.assign(s.values, { gpuSmClockRatio: v.gpuSmClockRatio, gpuUtilization: v.gpuUtilization, tpotOverTarget: 1.5, latencyOverTarget: 1.5 });
  const verdict = judgeOnce(s, 0);
  assert.equal(verdict.kind, 'gpu_throttle', JSON.stringify(verdict));
  const clock = verdict.evidence.find((e) => e.signal === 'gpuSmClockRatio')!;
  assert.deepEqual([clock.value, clock.threshold], [0.75, '<= 0.8']);
  assert.equal(verdict.evidence.find((e) => e.signal === 'gpuUtilization')!.threshold, '>= 0.5');
  assert.equal(verdict.evidence.find((e) => e.signal === 'latencyOverTarget')!.threshold, '>= 1');
});

test('gpu_throttle by clock: entry at a ratio of 0.8 or less, exit above 0.9; it needs a busy GPU and latency over target', () => {
  const at = (values: Partial<Record<SignalName, number>>) => {
    const s = healthy();
    Object.assign(s.values, { tpotOverTarget: 1.5, latencyOverTarget: 1.5 }, values);
    return s;
  };
  assert.equal(classify(at({ gpuSmClockRatio: 0.8 }), null).kind, 'gpu_throttle', 'at the entry threshold');
  assert.notEqual(classify(at({ gpuSmClockRatio: 0.85 }), null).kind, 'gpu_throttle', 'above it, a fresh verdict');
  assert.equal(classify(at({ gpuSmClockRatio: 0.85 }), 'gpu_throttle').kind, 'gpu_throttle', 'the current verdict holds up to the exit threshold');
  assert.equal(classify(at({ gpuSmClockRatio: 0.9 }), 'gpu_throttle').kind, 'gpu_throttle', 'at the exit threshold');
  assert.notEqual(classify(at({ gpuSmClockRatio: 0.91 }), 'gpu_throttle').kind, 'gpu_throttle', 'past it');
  assert.notEqual(classify(at({ gpuSmClockRatio: 0.5, gpuUtilization: 0.3 }), null).kind, 'gpu_throttle', 'an idle GPU clocks down by design');
  assert.equal(classify(at({ gpuSmClockRatio: 0.5, gpuUtilization: 0.5 }), null).kind, 'gpu_throttle', 'busy at exactly half');
  assert.notEqual(classify(at({ gpuSmClockRatio: 0.5, latencyOverTarget: 0.99, tpotOverTarget: 0.99 }), null).kind, 'gpu_throttle', 'within target: nothing to explain');
  assert.equal(classify(at({ gpuSmClockRatio: 0.5, latencyOverTarget: 1, tpotOverTarget: 1 }), null).kind, 'gpu_throttle', 'at the target');
});
