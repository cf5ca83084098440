/** The energy chart's span (issue 45, item 9): it starts at the first second attributed, as the page's other charts start with the daemon, and reaches back at most its 15 minutes. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CHART_MS, EnergyWindow, SLOT_MS } from '../../../src/metrics/energy/window.js';
import type { Share } from '../../../src/metrics/energy/ledger.js';

const T0 = 1_800_000_000_000; // a slot boundary
const busy = (at: number): Share => ({ at, upstream: 'u', model: 'm', state: 'busy', joules: 100, gpuSeconds: 1, outputTokens: 10, goodOutputTokens: 10, cause: null });

test('two minutes after the first second attributed the chart spans two minutes, not fifteen', () => {
  const w = new EnergyWindow(false);
  for (let s = 0; s < 120; s++) w.add(busy(T0 + s * 1000), 0);
  const series = w.series();
  assert.equal(series.start, T0);
  assert.equal(series.points, 120_000 / SLOT_MS);
  assert.deepEqual(series.joulesPerOutputToken['m'], new Array(12).fill(10));
});

test('past fifteen minutes the chart keeps its last fifteen', () => {
  const w = new EnergyWindow(false);
  for (let s = 0; s < 20 * 60; s++) w.add(busy(T0 + s * 1000), 0);
  const series = w.series();
  assert.equal(series.points, CHART_MS / SLOT_MS);
  assert.equal(series.start, T0 + 20 * 60_000 - CHART_MS);
});

test('no second attributed: an empty chart', () => {
  assert.deepEqual(new EnergyWindow(false).series().points, 0);
});
