// test-group: alone (verdicts judged from latencies against SLOs)
/**
 * A small KV cache (vLLM's --num-gpu-blocks-override) with long prompts and replies: the
 * cache fills and the engine preempts, so the verdict is `kv_cache`, citing the usage and
 * the preemption rate, and advising --gpu-memory-utilization and prefix caching.
 * (--speed 5 compresses the simulated time so the test stays short.)
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkRegime, longPrompt } from './bottleneck-harness.js';

test('200 KV blocks, 400-token prompts and replies, 12 streams: kv_cache, in the JSON, the gauge and the page', { timeout: 120_000 }, async () => {
  const v = await checkRegime(
    { sim: { numGpuBlocksOverride: 200, maxModelLen: 2048, speed: 5 }, load: { concurrency: 12, maxTokens: 400, prompt: longPrompt(400) } },
    'kv_cache', ['kvCacheUsage', 'kvCacheUsageMax', 'preemptionsPerSecond', 'engineWaiting'],
  );
  // Either alternative of the row: near full and preempting, or full with requests waiting.
  const ev = (s: string) => v.evidence.find((e) => e.signal === s)!.value!;
  assert.ok(ev('kvCacheUsageMax') >= 0.9, String(ev('kvCacheUsageMax')));
  assert.ok(ev('preemptionsPerSecond') > 0 || ev('engineWaiting') >= 1);
  assert.match(v.advice[0]!.text, /--gpu-memory-utilization/);
});
