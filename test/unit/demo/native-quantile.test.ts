/** The demo's live-line percentiles from native histograms (src/demo/native-quantile.ts). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_NATIVE, NativeSeries } from '../../../src/metrics/native.js';
import { nativeCounts, nativeQuantileOfDelta } from '../../../src/demo/native-quantile.js';
import type { DecodedFamily } from '../../../src/exporters/prometheus/proto.js';
import { percentile } from '../../../src/bench/stats.js';
import { mulberry32 } from '../../../src/lib/prng.js';

function family(name: string, series: NativeSeries[]): DecodedFamily[] {
  return [{
    name,
    metric: series.map((s) => {
      const n = s.snapshot();
      return { histogram: { sample_count: n.count, schema: n.schema, zero_threshold: n.zeroThreshold, zero_count: n.zeroCount, positive_span: n.positiveSpans, positive_delta: n.positiveDeltas } };
    }),
  }];
}

test('quantile of the difference between two scrapes, within a native bucket of the exact value', () => {
  const rand = mulberry32(3);
  const a = new NativeSeries({ ...DEFAULT_NATIVE, schema: 3 });
  const b = new NativeSeries({ ...DEFAULT_NATIVE, schema: 3 });
  for (let i = 0; i < 500; i++) a.observe(5 + rand()); // before: 5–6 s, must not count
  const before = family('h', [a, b]);
  const window: number[] = [];
  for (let i = 0; i < 20_000; i++) {
    const v = 0.045 * Math.exp(0.3 * (rand() + rand() + rand() - 1.5));
    window.push(v);
    (i % 2 ? a : b).observe(v);
  }
  const now = family('h', [a, b]);
  const sorted = window.sort((x, y) => x - y);
  for (const q of [0.5, 0.9, 0.99]) {
    const got = nativeQuantileOfDelta(q, nativeCounts(now, 'h'), nativeCounts(before, 'h'))!;
    const exact = percentile(sorted, q * 100);
    assert.ok(Math.abs(got / exact - 1) < 0.02, `P${q * 100}: ${got} vs ${exact}`);
  }
  assert.equal(nativeQuantileOfDelta(0.5, nativeCounts(now, 'h'), nativeCounts(now, 'h')), null, 'nothing new: no quantile');
  assert.equal(nativeCounts(now, 'missing'), null);
});

test('series at different schemas are summed at the lowest, and a schema drop between scrapes is bridged', () => {
  const fine = new NativeSeries({ ...DEFAULT_NATIVE, schema: 3 });
  const coarse = new NativeSeries({ ...DEFAULT_NATIVE, schema: 1 });
  fine.observe(1.5);
  const before = family('h', [fine]);
  coarse.observe(3);
  fine.observe(3);
  const now = family('h', [fine, coarse]);
  const counts = nativeCounts(now, 'h')!;
  assert.equal(counts.schema, 1);
  assert.equal([...counts.buckets.values()].reduce((x, y) => x + y, 0), 3);
  // Between the scrapes: two observations of 3 s, in schema-1 bucket (2^1.5, 2^2] = (2.83, 4].
  const p50 = nativeQuantileOfDelta(0.5, counts, nativeCounts(before, 'h'))!;
  assert.ok(p50 > 2.82 && p50 <= 4, `${p50}`);
});
