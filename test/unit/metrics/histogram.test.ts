/** SeriesHistogram renders exactly what prom-client's own Histogram renders for the same observations. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Histogram, Registry } from 'prom-client';
import { SeriesHistogram } from '../../../src/metrics/histogram.js';

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
