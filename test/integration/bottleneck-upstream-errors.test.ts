/** --error-rate 0.5: half the requests fail with HTTP 500, so the verdict is `upstream_errors`, citing the failure ratio. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkRegime } from './bottleneck-harness.js';

test('--error-rate 0.5: upstream_errors, in the JSON, the gauge and the page', { timeout: 120_000 }, async () => {
  const v = await checkRegime({ sim: { errorRate: 0.5 }, load: { concurrency: 4, maxTokens: 16 } }, 'upstream_errors', ['failureRatio', 'requests']);
  const ratio = v.evidence.find((e) => e.signal === 'failureRatio')!;
  assert.ok(ratio.value! >= 0.2 && ratio.value! <= 0.8, String(ratio.value));
  assert.equal(ratio.unit, 'ratio');
  assert.equal(ratio.window, '4s');
});
