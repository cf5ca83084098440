import { test } from 'node:test';
import assert from 'node:assert/strict';
import { distribution, percentile } from '../../../src/bench/stats.js';
import { outcomeOf, summarizePhase, summarizeResources, type EngineSample, type RequestSample } from '../../../src/bench/report.js';
import { sample } from './fixture.js';

const close = (a: number | null, b: number, eps = 1e-9) => assert.ok(a !== null && Math.abs(a - b) < eps, `${a} ≉ ${b}`);

test('percentiles are numpy linear (what vllm bench serve prints), on hand-made samples', () => {
  // np.percentile([1..10], [50, 95, 99]) == [5.5, 9.55, 9.91]
  const v = [10, 1, 9, 2, 8, 3, 7, 4, 6, 5];
  const d = distribution(v);
  close(d.p50, 5.5);
  close(d.p95, 9.55);
  close(d.p99, 9.91);
  assert.deepEqual([d.min, d.max, d.mean, d.count], [1, 10, 5.5, 10]);
  // np.percentile([0.1, 0.2, 0.4, 0.8], 95) == 0.74; a single sample is every percentile
  close(percentile([0.1, 0.2, 0.4, 0.8], 95), 0.74);
  close(distribution([0.042]).p99, 0.042);
  assert.deepEqual(distribution([]), { count: 0, min: null, max: null, mean: null, p50: null, p95: null, p99: null });
});

test('TPOT excludes the first token: (E2E − TTFT) / (output − 1), as vllm bench serve; summaries use the raw samples', () => {
  // vLLM: tpot = (latency - ttft) / (output_len - 1) per request, then np.percentile / np.mean over requests.
  const raw = [
    { ttft: 0.1, e2e: 1.1, out: 11 }, // tpot 0.1
    { ttft: 0.2, e2e: 0.6, out: 5 }, // tpot 0.1
    { ttft: 0.05, e2e: 0.45, out: 21 }, // tpot 0.02
  ];
  const samples: RequestSample[] = raw.map((r, i) => sample(i, { ttft: r.ttft, e2e: r.e2e, outputTokens: r.out, tpot: (r.e2e - r.ttft) / (r.out - 1) }));
  const s = summarizePhase(samples, 2, {}, 128);
  close(s.tpot.mean, (0.1 + 0.1 + 0.02) / 3);
  close(s.tpot.p50, 0.1);
  close(s.tpot.p99, 0.1); // sorted [0.02, 0.1, 0.1]: rank 1.98 lies between two 0.1s
  close(s.generationRate.p50, 10);
  close(s.ttft.p50, 0.1);
  close(s.outputTokensPerSecond, (11 + 5 + 21) / 2);
  close(s.requestsPerSecond, 1.5);
  assert.equal(s.outputLengthMatched, 0);
  assert.equal(s.goodput, null);
});

test('goodput counts ok requests meeting every SLO; attainment per SLO; failures are bad, aborts not judged', () => {
  const samples = [
    sample(0, { ttft: 0.05, tpot: 0.01 }), // good
    sample(1, { ttft: 0.5, tpot: 0.01 }), // ttft bad
    sample(2, { ttft: 0.05, tpot: 0.2 }), // tpot bad
    sample(3, { ttft: 0.05, tpot: null, outputTokens: 1 }), // tpot not observable: good on ttft
    sample(4, { outcome: 'upstream_error', status: 500, ttft: null, tpot: null }),
    sample(5, { outcome: 'client_abort', status: 0, ttft: null, tpot: null }),
  ];
  const s = summarizePhase(samples, 2, { ttft: 0.1, tpot: 0.05 }, 128);
  assert.equal(s.goodRequests, 2);
  close(s.goodput, 1);
  assert.deepEqual(s.slo.ttft, { threshold: 0.1, good: 3, judged: 5, attainment: 3 / 5 });
  assert.deepEqual(s.slo.tpot, { threshold: 0.05, good: 2, judged: 4, attainment: 2 / 4 });
  assert.deepEqual(s.errors, { upstream_error: 1, client_abort: 1 });
  const tight = summarizePhase(samples, 2, { ttft: 0.01 }, 128);
  assert.ok(tight.goodput! < s.goodput!);
});

test('outcomes use the proxy names', () => {
  const cases: [Parameters<typeof outcomeOf>[0], boolean, string][] = [
    [{ ok: true, status: 200, error: null }, false, 'ok'],
    [{ ok: false, status: 503, error: 'http 503' }, false, 'upstream_error'],
    [{ ok: false, status: 200, error: 'stream error event' }, false, 'stream_error'],
    [{ ok: false, status: 200, error: 'other side closed' }, false, 'stream_error'],
    [{ ok: false, status: 0, error: 'connect ECONNREFUSED 127.0.0.1:9' }, false, 'upstream_unreachable'],
    [{ ok: false, status: 0, error: 'Headers Timeout Error' }, false, 'upstream_timeout'],
    [{ ok: false, status: 200, error: 'destroyed' }, true, 'client_abort'],
  ];
  for (const [r, aborted, want] of cases) assert.equal(outcomeOf(r, aborted), want, JSON.stringify(r));
});

test('resources: mean/max of gauges; prefix cache hit ratio from counter deltas since the sample before the phase', () => {
  const e = (t: number, q: number | null, h: number | null, kv: number): EngineSample => ({ t, kvCacheUsage: kv, requestsRunning: 1, requestsWaiting: 0, prefixCacheQueries: q, prefixCacheHits: h });
  const r = summarizeResources([], [e(1, 1100, 150, 0.2), e(2, 1500, 350, 0.4)], e(0, 1000, 100, 0.9));
  close(r.prefixCacheHitRatio, 250 / 500);
  assert.equal(r.kvCacheUsage.samples, 2);
  close(r.kvCacheUsage.mean, 0.3);
  close(r.kvCacheUsage.max, 0.4);
  assert.equal(r.gpuUtilization.mean, null);
  assert.equal(summarizeResources([], [e(1, null, null, 0.1), e(2, null, null, 0.1)]).prefixCacheHitRatio, null);
  assert.equal(summarizeResources([], [e(1, 10, 5, 0.1), e(2, 10, 5, 0.1)]).prefixCacheHitRatio, null, 'no queries: no ratio');
});
