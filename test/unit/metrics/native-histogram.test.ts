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

// ---- Issue 29: the mutants the tests above let survive (docs/mutation-testing.md). Expected
// values are worked by hand from the definition: bucket i holds (base^(i-1), base^i],
// base = 2^(2^-schema).

test('a bad bucket factor is refused with a message that names it', () => {
  assert.throws(() => schemaForFactor(0.5), /bucket factor must be a number above 1, got 0\.5/);
  assert.throws(() => schemaForFactor(Number.NaN), /got NaN/);
});

test('the clock is Unix seconds: the default clock and the created timestamp, at start and after a reset', () => {
  const nowSeconds = Date.now() / 1000;
  assert.ok(Math.abs(DEFAULT_NATIVE.now() - nowSeconds) < 60, `DEFAULT_NATIVE.now() = ${DEFAULT_NATIVE.now()}`);
  const s = series();
  assert.ok(Math.abs(s.snapshot().createdSeconds - nowSeconds) < 60, `created ${s.snapshot().createdSeconds}`);
  s.observe(1);
  s.reset();
  assert.ok(Math.abs(s.snapshot().createdSeconds - nowSeconds) < 60, `created after reset ${s.snapshot().createdSeconds}`);
  assert.equal(s.count, 0);
});

test('NaN and ±Inf are not observations; sum is the sum of what was observed', () => {
  const s = series();
  s.observe(Number.NaN);
  s.observe(Infinity);
  s.observe(-Infinity);
  assert.equal(s.count, 0);
  assert.equal(s.sum, 0);
  assert.equal(s.buckets, 0);
  s.observe(1.5);
  s.observe(-0.25);
  s.observe(4);
  assert.equal(s.count, 3);
  assert.equal(s.sum, 5.25);
});

test('buckets counts the populated buckets of both signs', () => {
  const s = series();
  s.observe(1); // bucket 0
  s.observe(-1); // negative bucket 0
  s.observe(-2); // negative bucket 8 (schema 3: 2 = 2^(8/8))
  assert.equal(s.buckets, 3);
  assert.deepEqual([...s.negative].sort((a, b) => a[0] - b[0]), [[0, 1], [8, 1]]);
});

test('exemplars: none without a trace id; the latest four, oldest first, with value and timestamp', () => {
  const s = series();
  s.observe(1);
  assert.equal(s.exemplars, null, 'no trace id: no exemplar');
  for (let i = 0; i < 6; i++) s.observe(i + 0.5, `trace${i}`, 1000 + i);
  assert.deepEqual(s.exemplars, [
    { traceId: 'trace2', value: 2.5, timestamp: 1002 },
    { traceId: 'trace3', value: 3.5, timestamp: 1003 },
    { traceId: 'trace4', value: 4.5, timestamp: 1004 },
    { traceId: 'trace5', value: 5.5, timestamp: 1005 },
  ]);
  const t = series();
  t.observe(0.5, 'only', 7);
  t.observe(0.75);
  assert.deepEqual(t.exemplars, [{ traceId: 'only', value: 0.5, timestamp: 7 }]);
});

test('the bucket limit is a limit: at it, a due reset does not happen; past it, it does', () => {
  let now = 1000; // a clock that does not start at 0
  const s = series({ maxBuckets: 4, minResetSeconds: 60, now: () => now });
  now = 1100; // a reset is due from here on
  for (const v of [1, 2, 4, 8]) s.observe(v); // buckets 0, 8, 16, 24: four, at the limit
  assert.equal(s.resets, 0, 'at the limit: no reset');
  assert.equal(s.count, 4);
  assert.equal(s.buckets, 4);
  s.observe(1); // an existing bucket: still four
  assert.equal(s.resets, 0);
  assert.equal(s.count, 5);
  s.observe(16); // bucket 32: five, one past the limit
  assert.equal(s.resets, 1);
  assert.deepEqual([...s.positive], [[32, 1]]);
  assert.equal(s.count, 1);
});

test('the minimum reset duration counts from the last reset, on a clock that does not start at 0', () => {
  let now = 1000;
  const s = series({ maxBuckets: 2, minResetSeconds: 60, maxZeroThreshold: 0, now: () => now });
  now = 1030; // 30 s lived: under the 60 s minimum
  for (const v of [1, 2, 4]) s.observe(v); // three buckets: over the limit, no reset due
  assert.equal(s.resets, 0);
  assert.equal(s.count, 3);
  assert.ok(s.schema < 3, 'the schema dropped instead');
  now = 1061;
  s.observe(1024);
  assert.equal(s.resets, 1, 'due after 60 s');
});

test('negative buckets count toward the limit', () => {
  const s = series({ maxBuckets: 4, minResetSeconds: 0, maxZeroThreshold: 0 });
  // schema 3: 1 → 0, 2 → 8; −1 → 0, −2 → 8, −4 → 16: five buckets, one past the limit.
  for (const v of [1, 2, -1, -2, -4]) s.observe(v);
  assert.ok(s.buckets <= 4, `${s.buckets} buckets`);
  // Halving until it fits: schema 3 → 2 → ... keeps 0 and the powers of two apart until
  // schema −1 (base 4): 1 → 0, 2 → 1, 4 → 1, so positive {0, 1} and negative {0, 1}.
  assert.equal(s.schema, -1);
  assert.deepEqual([...s.positive].sort((a, b) => a[0] - b[0]), [[0, 1], [1, 1]]);
  assert.deepEqual([...s.negative].sort((a, b) => a[0] - b[0]), [[0, 1], [1, 2]]);
  const neg = series({ maxBuckets: 2, minResetSeconds: 0, maxZeroThreshold: 0 });
  for (const v of [-1, -2, -4]) neg.observe(v); // negative only: 0, 8, 16 at schema 3
  assert.ok(neg.buckets <= 2, `${neg.buckets} buckets`);
  assert.equal(neg.count, 3);
});

test('halving repeats until the buckets fit: buckets two apart need two halvings', () => {
  const s = series({ maxBuckets: 4, minResetSeconds: 0, maxZeroThreshold: 0 });
  // Schema 3 buckets 0, 2, 4, 6, 8, each value mid-bucket: 2^((i - ½)/8). One halving
  // (schema 2) maps them to 0, 1, 2, 3, 4, still five; a second (schema 1, base √2) to 0, 1, 1, 2, 2.
  for (const i of [0, 2, 4, 6, 8]) s.observe(2 ** ((i - 0.5) / 8));
  assert.equal(s.schema, 1);
  // By the definition at schema 1: 2^(-1/16) ∈ (2^-½, 1] → 0; 2^(3/16), 2^(7/16) ∈ (1, 2^½] → 1;
  // 2^(11/16), 2^(15/16) ∈ (2^½, 2] → 2.
  assert.deepEqual([...s.positive].sort((a, b) => a[0] - b[0]), [[0, 1], [1, 2], [2, 2]]);
});

test('the schema never drops below −4 (the spec\'s least); past it the limit is exceeded', () => {
  const s = series({ schema: -4, maxBuckets: 2, minResetSeconds: 0, maxZeroThreshold: 0 });
  // Schema −4, base 2^16: 1 → 0, 2^20 → ⌈20/16⌉ = 2, 2^40 → ⌈40/16⌉ = 3.
  for (const v of [1, 2 ** 20, 2 ** 40]) s.observe(v);
  assert.equal(s.schema, -4);
  assert.deepEqual([...s.positive].sort((a, b) => a[0] - b[0]), [[0, 1], [2, 1], [3, 1]]);
  assert.equal(s.snapshot().schema, -4);
});

test('the zero bucket widens to the nearest bucket of either sign, up to and including the maximum', () => {
  // Nearest zero is a positive bucket, the negatives come after it.
  const a = series({ maxBuckets: 3, minResetSeconds: 0, maxZeroThreshold: 1e-3 });
  for (const v of [1e-5, -0.1, -0.2, -0.4]) a.observe(v);
  assert.equal(a.schema, 3);
  assert.equal(a.zeroCount, 1);
  assert.equal(a.zeroThreshold, bucketUpperBound(bucketIndex(1e-5, 3), 3));
  assert.equal(a.positive.size, 0);
  assert.equal(a.negative.size, 3);
  // Nearest zero is a negative bucket.
  const b = series({ maxBuckets: 3, minResetSeconds: 0, maxZeroThreshold: 1e-3 });
  for (const v of [0.1, -1e-5, 0.2, 0.4]) b.observe(v);
  assert.equal(b.schema, 3);
  assert.equal(b.zeroCount, 1);
  assert.equal(b.negative.size, 0);
  assert.equal(b.positive.size, 3);
  // A threshold exactly at the maximum is allowed: 2^-10 is the upper bound of bucket −80 at schema 3.
  const c = series({ maxBuckets: 2, minResetSeconds: 0, maxZeroThreshold: 2 ** -10 });
  for (const v of [2 ** -10, 1, 2]) c.observe(v);
  assert.equal(c.schema, 3);
  assert.equal(c.zeroThreshold, 2 ** -10);
  assert.equal(c.zeroCount, 1);
  assert.deepEqual([...c.positive].sort((x, y) => x[0] - y[0]), [[0, 1], [8, 1]]);
});

test('spans: the empty span only when there are no buckets at all; keys sorted whatever the order observed', () => {
  const pos = series();
  pos.observe(1);
  assert.deepEqual(pos.snapshot().positiveSpans, [{ offset: 0, length: 1 }]);
  assert.deepEqual(pos.snapshot().negativeSpans, []);
  const neg = series();
  neg.observe(-1);
  assert.deepEqual(neg.snapshot().positiveSpans, [], 'negative buckets only: no positive span');
  assert.deepEqual(neg.snapshot().negativeSpans, [{ offset: 0, length: 1 }]);
  // Keys 5, -3, 4 inserted in that order: sorted -3, 4, 5; the second span starts 4 - (-3) - 1 = 6 after the first.
  const { spans, deltas } = spansOf(new Map([[5, 1], [-3, 2], [4, 1]]));
  assert.deepEqual(spans, [{ offset: -3, length: 1 }, { offset: 6, length: 2 }]);
  assert.deepEqual(deltas, [2, -1, 0]);
  const s = series();
  s.observe(2); // bucket 8
  s.observe(2);
  s.observe(0.5); // bucket -8
  s.observe(1); // bucket 0
  const snap = s.snapshot();
  assert.deepEqual(snap.positiveSpans, [{ offset: -8, length: 1 }, { offset: 7, length: 1 }, { offset: 7, length: 1 }]);
  assert.deepEqual(snap.positiveDeltas, [1, 0, 1]);
});
