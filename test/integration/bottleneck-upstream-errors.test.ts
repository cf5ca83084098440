// test-group: alone (verdicts judged from latencies against SLOs; a lagging proxy loop is a verdict of its own)
/**
 * --error-rate 0.5: half the requests fail with HTTP 500, so the verdict is `upstream_errors`,
 * citing the failure ratio. The `proxy` row comes first in the rules: a proxy loop that lags
 * by half the TTFT median. On a busy machine (Chromium starting beside it, other tests) this
 * proxy's loop lags by tens of ms, which is half of a TTFT of a few tens of ms: that verdict
 * would be the machine's, not the errors'. The prompts therefore take ~0.5 s to prefill
 * (100 tokens at 200 tokens/s), so only a loop lagging by a quarter second could outrank the
 * errors this test provokes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkRegime, longPrompt } from './bottleneck-harness.js';

test('--error-rate 0.5: upstream_errors, in the JSON, the gauge and the page', { timeout: 120_000 }, async () => {
  const v = await checkRegime({ sim: { errorRate: 0.5, prefillTps: 200 }, load: { concurrency: 4, maxTokens: 16, prompt: longPrompt(100) } }, 'upstream_errors', ['failureRatio', 'requests']);
  const ratio = v.evidence.find((e) => e.signal === 'failureRatio')!;
  assert.ok(ratio.value! >= 0.2 && ratio.value! <= 0.8, String(ratio.value));
  assert.equal(ratio.unit, 'ratio');
  assert.equal(ratio.window, '4s');
});
