// test-group: alone (verdicts judged from latencies against SLOs)
/**
 * The seed's case study, scripted (bench/case-study.ts): the A100/7B-shaped simulator at
 * 10 req/s under the real `infermeter bench` CLI, first with --max-num-seqs 8 and no prefix
 * caching, then with --max-num-seqs 512 and prefix caching. The first report's Analysis
 * names the limit (queue: requests wait for a batch slot while the KV cache has room) and
 * the knob; the second shows it relieved. Short steps keep the test modest: the simulator at
 * --speed 2 (every simulated time halved) and 20 req/s for 3 s send the same 60 requests into
 * the same shape as the seed's 10 req/s for 6 s, in half the time. `npm run bench:case-study`
 * runs it at the seed's own speed and rate (docs/bottleneck.md).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { analysisOf, runCaseStudy } from '../../bench/case-study.js';
import { reportValidator } from '../unit/bench/fixture.js';

test('case study (simulator ×2): at 20 req/s --max-num-seqs 8 is the limit (queue); --max-num-seqs 512 with prefix caching relieves it (none)', { timeout: 240_000 }, async () => {
  const out = mkdtempSync(join(tmpdir(), 'case-study-'));
  try {
    const [before, after] = await runCaseStudy({ out, qps: 20, duration: '3s', outputTokens: 32, speed: 2 });
    const validate = reportValidator();
    for (const r of [before!, after!]) assert.ok(validate(r.report), JSON.stringify(validate.errors));

    const a = before!.report.steps[0]!.analysis!;
    assert.equal(a.kind, 'queue', JSON.stringify(a));
    assert.ok(a.evidence.find((e) => e.signal === 'engineWaiting')!.value! >= 1);
    assert.ok(a.evidence.find((e) => e.signal === 'engineRunning')!.value! <= 8);
    const text1 = analysisOf(before!.markdown);
    assert.match(text1, /\*\*20 req\/s: queue\*\*/);
    assert.match(text1, /engineWaiting [\d.]+ requests/);
    assert.match(text1, /Change: raise --max-num-seqs/);

    const b = after!.report.steps[0]!.analysis!;
    assert.equal(b.kind, 'none', JSON.stringify(b));
    assert.ok(after!.report.steps[0]!.summary.ttft.p99! < before!.report.steps[0]!.summary.ttft.p99! / 5, 'TTFT P99 falls by more than 5x');
    assert.ok((after!.report.steps[0]!.resources.prefixCacheHitRatio ?? 0) > 0.5, 'the shared system prompt is served from the prefix cache');
    assert.match(analysisOf(after!.markdown), /\*\*20 req\/s: none\*\*/);
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});
