/**
 * src/metrics/energy/in-flight.ts: the oldest start among the requests in flight, from batch
 * counts and the starts of the requests each batch finished.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { InFlightStarts } from '../../../src/metrics/energy/in-flight.js';

test('the oldest start follows the requests in flight: new ones take their batch\'s time, a finished one takes its own entry', () => {
  const f = new InFlightStarts();
  assert.equal(f.oldest, null);
  f.note(1000, 2, []);
  f.note(3000, 3, []);
  assert.equal(f.oldest, 1000);
  // One of the two that started at ~1 s ends: the other still holds 1 s.
  f.note(4000, 2, [990]);
  assert.equal(f.oldest, 1000);
  f.note(5000, 1, [995]);
  assert.equal(f.oldest, 3000, 'both early ones ended');
  // Started and finished within one batch: the count stays, the entry of the one still running stays.
  f.note(6000, 1, [5500]);
  assert.equal(f.oldest, 3000);
  f.note(7000, 0, [2990]);
  assert.equal(f.oldest, null);
  // A count below what is kept (a worker lost): the youngest go.
  f.note(8000, 3, []);
  f.note(9000, 4, []);
  f.note(9500, 1, []);
  assert.equal(f.oldest, 8000);
});
