/**
 * Rule windows as Prometheus durations (expected values worked out by hand from the unit
 * sizes: 1m = 60 s, 1h = 3600 s, 1d = 86400 s, 1w = 604800 s) and `--test-windows`, which
 * divides every window by 60 and never goes below one second.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { STANDARD_WINDOWS, promDuration, standardScale, testScale, windowSeconds } from '../../../src/slo/windows.js';

test('windowSeconds reads each unit', () => {
  assert.equal(windowSeconds('45s'), 45);
  assert.equal(windowSeconds('5m'), 300);
  assert.equal(windowSeconds('2h'), 7200);
  assert.equal(windowSeconds('3d'), 259200);
  assert.equal(windowSeconds('4w'), 2419200);
  assert.equal(windowSeconds('0s'), 0);
});

test('windowSeconds refuses anything but digits and one unit, naming the input', () => {
  for (const bad of ['', '5', 'm', '5 m', '1.5h', '-5m', '5y', 'x5m', '5mx', '5m5s', ' 5m', '5m ']) {
    assert.throws(() => windowSeconds(bad), (e: Error) => e.message === `expected a Prometheus duration such as 5m, got "${bad}"`, JSON.stringify(bad));
  }
});

test('promDuration states seconds in the largest unit that divides them exactly', () => {
  assert.equal(promDuration(1), '1s');
  assert.equal(promDuration(59), '59s');
  assert.equal(promDuration(60), '1m');
  assert.equal(promDuration(90), '90s');
  assert.equal(promDuration(120), '2m');
  assert.equal(promDuration(3600), '1h');
  assert.equal(promDuration(5400), '90m');
  assert.equal(promDuration(86400), '1d');
  assert.equal(promDuration(90000), '25h');
  assert.equal(promDuration(604800), '7d', 'weeks are stated in days');
  assert.equal(promDuration(86460), '1441m');
});

test('promDuration refuses what no Prometheus duration states', () => {
  for (const bad of [0, -60, 1.5, Number.NaN]) {
    assert.throws(() => promDuration(bad), (e: Error) => e.message === `cannot state ${bad}s as a Prometheus duration`, String(bad));
  }
});

test('the standard windows are kept as they are; --test-windows divides by 60 with a floor of 1s', () => {
  assert.deepEqual(STANDARD_WINDOWS.map(standardScale), ['5m', '30m', '1h', '2h', '6h', '1d', '3d']);
  assert.deepEqual(STANDARD_WINDOWS.map(testScale), ['5s', '30s', '1m', '2m', '6m', '24m', '72m']);
  assert.equal(standardScale('60m'), '1h');
  assert.equal(testScale('20s'), '1s', 'a third of a second rounds to 0: the 1s floor');
  assert.equal(testScale('30s'), '1s', 'half a second rounds up to 1s');
  assert.equal(testScale('1s'), '1s');
  assert.equal(testScale('90s'), '2s', '1.5 s rounds to 2 s');
  assert.equal(testScale('150s'), '3s', '2.5 s rounds half up');
  assert.equal(testScale('4w'), '672m');
});
