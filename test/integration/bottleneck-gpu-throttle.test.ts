// test-group: alone (verdicts judged from latencies against SLOs)
/**
 * A fake nvidia-smi whose board is throttled (FAKE_NVIDIA_SMI_THROTTLE: power, then thermal)
 * while TPOT misses a 30 ms SLO (the simulator's step is 45 ms): `gpu_throttle`, citing
 * the violation and the latency against its target.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkRegime } from './bottleneck-harness.js';

test('power violations with TPOT over its SLO: gpu_throttle, in the JSON, the gauge and the page', { timeout: 120_000 }, async () => {
  const v = await checkRegime({ sim: {}, slos: { tpot: '30ms' }, gpu: { THROTTLE: 'power' }, load: { concurrency: 2, maxTokens: 16 } }, 'gpu_throttle', ['gpuPowerViolation', 'latencyOverTarget']);
  assert.ok(v.evidence.find((e) => e.signal === 'gpuPowerViolation')!.value! >= 0.1);
  assert.match(v.advice[0]!.text, /nvidia-smi -q -d PERFORMANCE/);
});

test('thermal violations: gpu_throttle citing the thermal flag (JSON and gauge)', { timeout: 120_000 }, async () => {
  const v = await checkRegime({ sim: {}, slos: { tpot: '30ms' }, gpu: { THROTTLE: 'thermal' }, load: { concurrency: 2, maxTokens: 16 } }, 'gpu_throttle', ['gpuThermalViolation', 'latencyOverTarget'], false);
  assert.equal(v.evidence.find((e) => e.signal === 'gpuThermalViolation')!.value, 1);
});
