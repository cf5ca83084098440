/** Native histogram bucketing (src/metrics/native.ts) against the exposition spec's definitions. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  bucketIndex, bucketsOf, bucketUpperBound, DEFAULT_NATIVE, DEFAULT_ZERO_THRESHOLD, NativeSeries, schemaForFactor, spansOf, type NativeOptions,
} from '../../../src/metrics/native.js';
import { mulberry32 } from '../../../src/lib/prng.js';

function series(over: Partial<NativeOptions> = {}): NativeSeries {
  return new NativeSeries({ ...DEFAULT_NATIVE, schema: 3, ...over });
}

/** The definition, in floating point: bucket i holds (base^(i-1), base^i]. Good away from edges. */
function naiveIndex(v: number, schema: number): number {
  return Math.ceil(Math.log2(v) * 2 ** schema) + 0;
}

test('schema from the bucket factor: the largest schema whose growth factor does not exceed it', () => {
  assert.equal(schemaForFactor(1.1), 3);
  assert.equal(schemaForFactor(2), 0);
  assert.equal(schemaForFactor(4), -1);
  assert.equal(schemaForFactor(1.01), 7);
  assert.equal(schemaForFactor(1.0001), 8, 'clamped to 8');
  assert.equal(schemaForFactor(1e9), -4, 'clamped to -4');
  for (const f of [1.01, 1.05, 1.1, 1.5, 2, 3, 10]) assert.ok(2 ** (2 ** -schemaForFactor(f)) <= f || schemaForFactor(f) === -4);
  assert.throws(() => schemaForFactor(1));
});

test('bucket edges: a value equal to an upper bound is in that bucket, the next double up is in the next', () => {
  for (const schema of [8, 5, 3, 1, 0, -1, -2, -4]) {
    for (let i = -300; i <= 300; i++) {
      const ub = bucketUpperBound(i, schema);
      if (!(ub > 2 ** -1000 && ub < 2 ** 1000)) continue;
      assert.equal(bucketIndex(ub, schema), i, `schema ${schema}: upper bound of bucket ${i} (${ub})`);
      const up = ub * (1 + 2 ** -51);
      assert.equal(bucketIndex(up, schema), i + 1, `schema ${schema}: just above bucket ${i}`);
      const down = ub * (1 - 2 ** -51);
      const expected = bucketUpperBound(i - 1, schema) < down ? i : i - 1;
      assert.equal(bucketIndex(down, schema), expected, `schema ${schema}: just below the upper bound of bucket ${i}`);
    }
  }
  // Powers of two are bucket boundaries at every schema.
  assert.equal(bucketIndex(1, 3), 0);
  assert.equal(bucketIndex(2, 3), 8);
  assert.equal(bucketIndex(0.5, 3), -8);
  assert.equal(bucketIndex(2, 0), 1);
  assert.equal(bucketIndex(4, -1), 1, 'schema -1: base 4, bucket 1 is (1, 4]');
  assert.equal(bucketIndex(5, -1), 2);
  assert.equal(bucketIndex(1.0000001, -1), 1);
});

test('bucket index matches the definition for values away from the edges', () => {
  const rand = mulberry32(7);
  for (let n = 0; n < 20_000; n++) {
    const v = 10 ** (rand() * 24 - 12);
    for (const schema of [8, 3, 0, -3]) {
      const exact = naiveIndex(v, schema);
      const fraction = Math.log2(v) * 2 ** schema - (exact - 1);
      if (fraction < 1e-9 || fraction > 1 - 1e-9) continue; // too close to a boundary for floating log2
      assert.equal(bucketIndex(v, schema), exact, `${v} at schema ${schema}`);
    }
  }
});

test('zero bucket: |v| <= threshold counts there; negatives mirror positives', () => {
  const s = series();
  s.observe(0);
  s.observe(DEFAULT_ZERO_THRESHOLD);
  s.observe(-DEFAULT_ZERO_THRESHOLD / 2);
  s.observe(DEFAULT_ZERO_THRESHOLD * 2);
  s.observe(-1);
  s.observe(1);
  assert.equal(s.zeroCount, 3);
  assert.equal(s.count, 6);
  assert.deepEqual([...s.negative], [[0, 1]]);
  assert.deepEqual([...s.positive].sort((a, b) => a[0] - b[0]), [[-1016, 1], [0, 1]]);
  const snap = s.snapshot();
  assert.equal(snap.zeroThreshold, DEFAULT_ZERO_THRESHOLD);
  assert.deepEqual(snap.negativeSpans, [{ offset: 0, length: 1 }]);
});

test('spans and deltas: offsets are gaps from the previous span, deltas from the previous bucket', () => {
  const buckets = new Map([[-3, 2], [-2, 5], [4, 1], [5, 1], [9, 4]]);
  const { spans, deltas } = spansOf(buckets);
  assert.deepEqual(spans, [{ offset: -3, length: 2 }, { offset: 5, length: 2 }, { offset: 3, length: 1 }]);
  assert.deepEqual(deltas, [2, 3, -4, 0, 3]);
  assert.deepEqual([...bucketsOf(spans, deltas)], [...buckets]);
  const empty = series().snapshot();
  assert.deepEqual(empty.positiveSpans, [{ offset: 0, length: 0 }], 'an empty series still reads as native');
});

test('over the bucket limit with no reset due: the schema drops and buckets merge exactly', () => {
  const s = series({ maxBuckets: 20, minResetSeconds: 0, maxZeroThreshold: 0 });
  const values: number[] = [];
  for (let i = 0; i < 200; i++) values.push(1.07 ** i);
  for (const v of values) {
    s.observe(v);
    assert.ok(s.buckets <= 20);
  }
  assert.ok(s.schema < 3, `schema lowered to ${s.schema}`);
  // Same buckets as observing directly at the final schema.
  const direct = new Map<number, number>();
  for (const v of values) direct.set(bucketIndex(v, s.schema), (direct.get(bucketIndex(v, s.schema)) ?? 0) + 1);
  assert.deepEqual([...s.positive].sort((a, b) => a[0] - b[0]), [...direct].sort((a, b) => a[0] - b[0]));
  assert.equal([...s.positive.values()].reduce((a, b) => a + b, 0), 200);
});

test('over the limit: the zero bucket widens first while it may, swallowing the bucket nearest zero', () => {
  const s = series({ maxBuckets: 4, minResetSeconds: 0, maxZeroThreshold: 1e-3 });
  for (const v of [1e-5, 2e-5, 0.1, 0.2]) s.observe(v);
  assert.equal(s.zeroCount, 0);
  s.observe(0.4);
  assert.equal(s.schema, 3, 'schema kept');
  assert.equal(s.zeroCount, 1);
  assert.equal(s.zeroThreshold, bucketUpperBound(bucketIndex(1e-5, 3), 3));
  assert.equal(s.buckets, 4);
  s.observe(0.8);
  assert.equal(s.zeroCount, 2);
  s.observe(1.6); // nearest bucket is now 0.1's, above 1e-3: the schema has to drop
  assert.ok(s.schema < 3);
  assert.equal(s.count, 7);
  assert.equal(s.zeroCount + [...s.positive.values()].reduce((a, b) => a + b, 0), 7);
});

test('over the limit after the minimum reset duration: the series resets and keeps the triggering value', () => {
  let now = 0;
  const s = series({ maxBuckets: 10, minResetSeconds: 60, now: () => now });
  for (let i = 0; i < 10; i++) s.observe(2 ** i);
  now = 61;
  s.observe(2 ** 20);
  assert.equal(s.resets, 1);
  assert.equal(s.count, 1);
  assert.equal(s.sum, 2 ** 20);
  assert.equal(s.schema, 3);
  assert.deepEqual([...s.positive], [[160, 1]]);
});

test('a million values over 12 decades never exceed 160 buckets per series', () => {
  const rand = mulberry32(42);
  const values = Float64Array.from({ length: 1_000_000 }, () => 10 ** (rand() * 12 - 6));
  // No reset due (an hour's minimum, no clock movement): the schema drops instead, counts stay whole.
  const kept = series({ now: () => 0 });
  let most = 0;
  for (const v of values) {
    kept.observe(v);
    if (kept.buckets > most) most = kept.buckets;
  }
  assert.equal(most, 160, 'the limit was reached, never passed');
  assert.ok(kept.schema <= 2, `12 decades are ~40 powers of two: schema ${kept.schema}`);
  assert.equal(kept.resets, 0);
  assert.equal(kept.count, 1_000_000);
  assert.equal(kept.zeroCount + [...kept.positive.values()].reduce((a, b) => a + b, 0), 1_000_000);

  // A reset due every 0.1 s at a thousand values a second: each overflow resets instead.
  let now = 0;
  const resetting = series({ minResetSeconds: 0.1, now: () => now });
  most = 0;
  for (let i = 0; i < values.length; i++) {
    now = i / 1000;
    resetting.observe(values[i]!);
    if (resetting.buckets > most) most = resetting.buckets;
  }
  assert.ok(most <= 160, `at most ${most} buckets`);
  assert.ok(resetting.resets > 1000, `${resetting.resets} resets`);
  assert.equal(resetting.schema, 3, 'a reset starts over at the configured schema');
  assert.ok(resetting.count < 1000);
});
