/** Light load on the default (A100/7B-shaped) simulator: `none`, with the latency against its target and the empty queue as evidence. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkRegime } from './bottleneck-harness.js';

test('one stream on default flags: none, in the JSON, the gauge and the page', { timeout: 120_000 }, async () => {
  const v = await checkRegime({ sim: {}, load: { concurrency: 1, maxTokens: 16 } }, 'none', ['latencyOverTarget', 'requestsPerSecond', 'engineWaiting', 'kvCacheUsage']);
  assert.ok(v.evidence.find((e) => e.signal === 'latencyOverTarget')!.value! < 1);
  assert.equal(v.evidence.find((e) => e.signal === 'engineWaiting')!.value, 0);
  assert.match(v.advice[0]!.text, /nothing to change/);
});
