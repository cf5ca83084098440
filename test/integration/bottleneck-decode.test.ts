// test-group: alone (verdicts judged from latencies against SLOs)
/**
 * A large batch whose step time grows (--step-per-seq-ms: each running sequence adds to the
 * step): after a few requests alone (the TPOT floor), 16 streams make TPOT well over twice
 * the floor, and the fake nvidia-smi (an H100 with GPM, following the simulator) shows DRAM
 * busy: `decode`, citing the TPOT growth and the DRAM bandwidth. (--speed 2 compresses time;
 * 16 streams, not more, keep the proxy's own loop far from the limit on a busy test machine.)
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkRegime } from './bottleneck-harness.js';

test('16 streams at 6 ms per sequence per step: decode, in the JSON, the gauge and the page', { timeout: 120_000 }, async () => {
  const v = await checkRegime(
    { sim: { stepPerSeqMs: 6, speed: 2 }, gpu: { MODEL: 'NVIDIA H100 80GB HBM3' }, load: { concurrency: 16, maxTokens: 24, warmup: 4 } },
    'decode', ['tpotGrowth', 'gpuDramActive', 'tpotFloor', 'tpotP50', 'engineRunning'],
  );
  assert.ok(v.evidence.find((e) => e.signal === 'tpotGrowth')!.value! >= 2);
  assert.ok(v.evidence.find((e) => e.signal === 'gpuDramActive')!.value! >= 0.6, 'GPM DRAM bandwidth, from the fake H100');
  assert.equal(v.evidence.find((e) => e.signal === 'tpotFloor')!.window, 'since start');
});
