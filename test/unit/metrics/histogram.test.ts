/** SeriesHistogram renders exactly what prom-client's own Histogram renders for the same observations. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Histogram, Registry } from 'prom-client';
import { HistogramSeries, SeriesHistogram } from '../../../src/metrics/histogram.js';

test('same text as prom-client Histogram: bounds exactly, between, above the last, several label sets', async () => {
  const buckets = [0.001, 0.005, 0.01, 0.1, 1, 2.5, 10];
  const theirs = new Registry();
  const ours = new Registry();
  const labelNames = ['model', 'op'];
  const ref = new Histogram({ name: 'x_seconds', help: 'help "text"', labelNames, buckets, registers: [theirs] });
  const mine = new SeriesHistogram('x_seconds', 'help "text"', labelNames, buckets, ours);
  let s = 7;
  const rand = () => ((s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32);
  for (let i = 0; i < 5000; i++) {
    const labels = { model: ['a', 'b', 'c"d'][i % 3]!, op: i % 2 ? 'chat' : 'text_completion' };
    const v = i % 5 === 0 ? buckets[i % buckets.length]! : i % 7 === 0 ? 50 + rand() : rand() * rand() * 3;
    ref.observe(labels, v);
    if (i % 2) mine.observe(labels, v);
    else mine.labels(labels).observe(v);
  }
  assert.equal(await ours.metrics(), await theirs.metrics());
  assert.deepEqual(await ours.getMetricsAsJSON(), await theirs.getMetricsAsJSON());
});

test('a value that is not finite is ignored, not counted', async () => {
  const reg = new Registry();
  const h = new SeriesHistogram('y_seconds', 'h', ['m'], [1], reg);
  h.observe({ m: 'a' }, Number.NaN);
  h.observe({ m: 'a' }, 0.5);
  assert.match(await reg.metrics(), /y_seconds_count\{m="a"\} 1\n/);
});

test('SeriesCounter renders what prom-client Counter renders: several label sets, zero seeds, increments', async () => {
  const { Counter } = await import('prom-client');
  const { SeriesCounter } = await import('../../../src/metrics/counter.js');
  const theirs = new Registry();
  const ours = new Registry();
  const ref = new Counter({ name: 'c_total', help: 'h', labelNames: ['model', 'outcome'], registers: [theirs] });
  const mine = new SeriesCounter('c_total', 'h', ['model', 'outcome'], ours);
  for (let i = 0; i < 1000; i++) {
    const labels = { model: ['a', 'b"', 'c'][i % 3]!, outcome: i % 4 ? 'ok' : 'upstream_error' };
    const v = i % 10 === 0 ? 0 : i % 3;
    ref.inc(labels, v);
    mine.inc(labels, v);
  }
  assert.equal(await ours.metrics(), await theirs.metrics());
  assert.deepEqual(await ours.getMetricsAsJSON(), await theirs.getMetricsAsJSON());
  assert.throws(() => mine.inc({ model: 'a', outcome: 'ok' }, -1), /only goes up/);
});

test('bounds given out of order or twice are sorted and deduplicated (le lines ascending, counts cumulative)', async () => {
  const reg = new Registry();
  const h = new SeriesHistogram('z_seconds', 'h', ['m'], [1, 0.1, 0.5, 0.1], reg);
  for (const v of [0.05, 0.1, 0.3, 0.7, 2]) h.observe({ m: 'a' }, v);
  // By hand: le 0.1 holds 0.05 and 0.1; le 0.5 adds 0.3; le 1 adds 0.7; 2 is +Inf only.
  const lines = (await reg.metrics()).split('\n').filter((l) => l.startsWith('z_seconds_bucket'));
  assert.deepEqual(lines, [
    'z_seconds_bucket{le="0.1",m="a"} 2',
    'z_seconds_bucket{le="0.5",m="a"} 3',
    'z_seconds_bucket{le="1",m="a"} 4',
    'z_seconds_bucket{le="+Inf",m="a"} 5',
  ]);
});

test('label sets whose values concatenate alike are still two series', async () => {
  const reg = new Registry();
  const h = new SeriesHistogram('k_seconds', 'h', ['a', 'b'], [1], reg);
  h.observe({ a: 'x', b: 'yz' }, 0.5);
  h.observe({ a: 'xy', b: 'z' }, 0.5);
  const text = await reg.metrics();
  assert.match(text, /k_seconds_count\{a="x",b="yz"\} 1\n/);
  assert.match(text, /k_seconds_count\{a="xy",b="z"\} 1\n/);
});

test('observe answers the bucket index: le is inclusive, +Inf is the bound count, -1 for a value not counted', () => {
  const s = new HistogramSeries({}, Float64Array.from([0.1, 1]));
  assert.equal(s.observe(0.1), 0);
  assert.equal(s.observe(0.5), 1);
  assert.equal(s.observe(5), 2);
  assert.equal(s.observe(Number.NaN), -1);
  assert.equal(s.observe(Number.POSITIVE_INFINITY), -1);
  assert.deepEqual([...s.counts], [1, 1]);
  assert.equal(s.count, 3);
  assert.equal(s.sum, 5.6);
});

test('exemplars: one slot per bucket and +Inf, the latest traced value kept in the same object; untraced or not-finite values make none', () => {
  const s = new HistogramSeries({}, Float64Array.from([0.1, 1]));
  s.observeTraced(Number.NaN, 'aa', 1);
  assert.equal(s.exemplars, null);
  s.observeTraced(0.05, 'a1', 10);
  assert.deepEqual(s.exemplars, [{ labelSet: { trace_id: 'a1' }, value: 0.05, timestamp: 10 }, null, null]);
  const first = s.exemplars![0];
  s.observeTraced(0.07, 'a2', 11);
  s.observe(0.08);
  s.observeTraced(3, 'b1', 12);
  assert.equal(s.exemplars![0], first, 'one object per bucket at most');
  assert.deepEqual(s.exemplars, [{ labelSet: { trace_id: 'a2' }, value: 0.07, timestamp: 11 }, null, { labelSet: { trace_id: 'b1' }, value: 3, timestamp: 12 }]);
});

test('getForPromString shares the series labels (formatted once); get() merges them into each line', async () => {
  const reg = new Registry();
  const h = new SeriesHistogram('s_seconds', 'h', ['m'], [1], reg);
  h.observe({ m: 'a' }, 0.5);
  const shared = (await h.getForPromString()).values;
  assert.deepEqual(shared.map((v) => [v.labels, v.sharedLabels, v.metricName, v.value]), [
    [{ le: 1 }, { m: 'a' }, 's_seconds_bucket', 1],
    [{ le: '+Inf' }, { m: 'a' }, 's_seconds_bucket', 1],
    [{}, { m: 'a' }, 's_seconds_sum', 0.5],
    [{}, { m: 'a' }, 's_seconds_count', 1],
  ]);
  const merged = (await h.get()).values;
  assert.deepEqual(merged.map((v) => [v.labels, v.sharedLabels]), [
    [{ le: 1, m: 'a' }, undefined], [{ le: '+Inf', m: 'a' }, undefined], [{ m: 'a' }, undefined], [{ m: 'a' }, undefined],
  ]);
});

test('reset (registry.resetMetrics) drops every series', async () => {
  const reg = new Registry();
  const h = new SeriesHistogram('r_seconds', 'h', ['m'], [1], reg);
  h.observe({ m: 'a' }, 0.5);
  reg.resetMetrics();
  assert.doesNotMatch(await reg.metrics(), /r_seconds_(bucket|sum|count)/);
});
