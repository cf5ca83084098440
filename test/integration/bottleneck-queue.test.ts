// test-group: alone (verdicts judged from latencies against SLOs)
/**
 * --max-num-seqs small under load: requests wait for a batch slot while the KV cache has
 * room, so the verdict is `queue`, citing the engine's waiting requests, the KV cache's
 * headroom and the share of TTFT spent queued, and advising --max-num-seqs.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkRegime } from './bottleneck-harness.js';

test('--max-num-seqs 4 with 16 streams: queue, in the JSON, the gauge and the page', { timeout: 120_000 }, async () => {
  const v = await checkRegime({ sim: { maxNumSeqs: 4 }, load: { concurrency: 16, maxTokens: 24 } }, 'queue', ['engineWaiting', 'kvCacheUsageMax', 'queueShare', 'engineRunning', 'queueTimeMean']);
  assert.ok(v.evidence.find((e) => e.signal === 'engineWaiting')!.value! >= 1);
  assert.ok(v.evidence.find((e) => e.signal === 'engineRunning')!.value! <= 4);
  assert.match(v.advice[0]!.text, /--max-num-seqs/);
});
