// test-group: alone (verdicts judged from latencies against SLOs)
/**
 * Light load on the default (A100/7B-shaped) simulator: `none`, with the latency against its
 * target and the empty queue as evidence, and (--bottleneck-bench) how much of the load where
 * an earlier bench saw the SLO break is in use.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkRegime } from './bottleneck-harness.js';

test('one stream on default flags: none, in the JSON, the gauge and the page; its share of the bench\'s limit', { timeout: 120_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'bottleneck-none-'));
  try {
    // A bench run whose SLO broke at its third step, 12.5 req/s.
    const bench = join(dir, 'bench.json');
    const step = (load: number, rps: number, attainment: number) => ({ mode: 'rate', load, summary: { requestsPerSecond: rps, slo: { ttft: { attainment } } } });
    writeFileSync(bench, JSON.stringify({ schemaVersion: 1, steps: [step(4, 4, 1), step(8, 7.9, 0.995), step(16, 12.5, 0.8)] }));
    const v = await checkRegime({ sim: {}, args: ['--bottleneck-bench', bench], load: { concurrency: 1, maxTokens: 16 } }, 'none', ['latencyOverTarget', 'requestsPerSecond', 'loadVsBenchLimit', 'engineWaiting', 'kvCacheUsage']);
    assert.ok(v.evidence.find((e) => e.signal === 'latencyOverTarget')!.value! < 1);
    assert.equal(v.evidence.find((e) => e.signal === 'engineWaiting')!.value, 0);
    const share = v.evidence.find((e) => e.signal === 'loadVsBenchLimit')!;
    const rps = v.evidence.find((e) => e.signal === 'requestsPerSecond')!.value!;
    assert.ok(Math.abs(share.value! - rps / 12.5) < 0.01, `${share.value} vs ${rps} / 12.5`);
    assert.match(share.basis!, /broke at 12\.5 req\/s, step 3 \(16 req\/s\)/);
    assert.match(v.advice[0]!.text, /nothing to change/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
