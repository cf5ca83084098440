// test-group: alone (verdicts judged from latencies against SLOs)
/**
 * Slow prefill with long prompts: a small --max-num-batched-tokens (vLLM's chunked-prefill
 * budget) makes a 4000-token prompt take dozens of steps, so TTFT is over target, made of
 * prefill, with an empty queue: `prefill`, citing the prefill share of TTFT from the
 * engine's prefill histogram.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkRegime, longPrompt } from './bottleneck-harness.js';

test('--max-num-batched-tokens 128 and 4000-token prompts: prefill, in the JSON, the gauge and the page', { timeout: 120_000 }, async () => {
  const v = await checkRegime(
    { sim: { maxNumBatchedTokens: 128 }, args: ['--bottleneck-window', '8s'], load: { concurrency: 1, maxTokens: 8, prompt: longPrompt(4000) } },
    'prefill', ['ttftOverTarget', 'prefillShare', 'engineWaiting', 'queueShare'],
  );
  assert.ok(v.evidence.find((e) => e.signal === 'prefillShare')!.value! >= 0.6);
  assert.equal(v.evidence.find((e) => e.signal === 'prefillShare')!.basis, undefined, 'vLLM has the prefill histogram: no fallback');
  assert.match(v.advice[0]!.text, /--max-num-batched-tokens/);
  // --prefix-cache is off: no prefix evidence, and the prefix-caching knob says how to learn whether it would pay.
  assert.equal(v.evidence.filter((e) => e.signal.startsWith('prefix')).length, 0);
  assert.match(v.advice[0]!.text, /^--enable-prefix-caching for shared prompt prefixes \(--prefix-cache true measures whether it would pay\)/);
});
