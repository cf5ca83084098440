/**
 * src/collectors/gpu/energy.ts and its counter in series.ts, from hand-made samples: constant
 * power for a known time gives the exact joules; a gap and a restart neither lose energy nor
 * run it backwards; the driver's counter is preferred where present, and used as is.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { GpuEnergy } from '../../../src/collectors/gpu/energy.js';
import { GpuSeries } from '../../../src/collectors/gpu/series.js';
import { MachineSnapshot } from '../../../src/collectors/snapshot.js';
import { parsePrometheusText } from '../../../src/lib/prom-text.js';

const POWER = 'infermeter_gpu_power_watts';
const power = (watts: number | null) => ({ powerWatts: watts, counterJoules: null });

test('constant power for a known time gives the exact joules (300 W for 10 s = 3000 J), whatever the spacing of the readings', () => {
  const e = new GpuEnergy();
  assert.equal(e.total(0), null, 'nothing read yet');
  for (let t = 0; t <= 10_000; t += 1000) e.observe(0, power(300), t);
  assert.equal(e.total(0), 3000);
  assert.equal(e.source(0), 'power');
  // Uneven spacing: the same 10 s at 300 W.
  for (const t of [0, 250, 1700, 1701, 6400, 10_000]) e.observe(1, power(300), t);
  assert.equal(e.total(1), 3000);
  // A ramp from 100 W to 300 W over 2 s is the trapezoid's exact case: 400 J.
  e.observe(2, power(100), 0);
  e.observe(2, power(200), 1000);
  e.observe(2, power(300), 2000);
  assert.equal(e.total(2), 400);
});

test('a gap (dmon restarting, the collector down) is bridged, not lost; repeated and backward timestamps add nothing; never backwards', () => {
  const e = new GpuEnergy();
  const totals: number[] = [];
  const at = (t: number, w: number | null) => totals.push(e.observe(0, power(w), t)!);
  for (let t = 0; t <= 5000; t += 1000) at(t, 300);
  at(5000, 300); // the collector published the same sample twice
  at(6000, null); // dmon printed "-" for power
  at(15_000, 300); // back after a 10 s gap
  assert.equal(e.total(0), 300 * 15, '15 s at 300 W, the gap included, counted once');
  at(14_000, 900); // a clock that stepped back: nothing added, and the next interval starts from it
  at(16_000, 900);
  assert.equal(e.total(0), 300 * 15 + 900 * 2);
  for (let i = 1; i < totals.length; i++) assert.ok(totals[i]! >= totals[i - 1]!, `reading ${i} ran backwards: ${totals.join(', ')}`);
  assert.equal(e.observe(7, power(null), 0), null, 'a GPU that never showed power has no energy');
  assert.equal(e.observe(7, power(-5), 0), null, 'nor one showing a negative draw');
});

test('the driver counter is used as is: its increases, whatever the power says; a driver reload counts from zero; a gap loses nothing', () => {
  const e = new GpuEnergy();
  const r = (joules: number | null, watts: number | null = 9999) => ({ powerWatts: watts, counterJoules: joules });
  assert.equal(e.observe(0, r(1_000_000), 0), 0, 'the first value is the baseline');
  assert.equal(e.source(0), 'driver_counter');
  e.observe(0, r(1_000_450), 1000);
  assert.equal(e.total(0), 450, 'the counter\'s increase, not 9999 W × 1 s');
  e.observe(0, r(null), 2000); // a scrape without the field: nothing, the next increase covers it
  e.observe(0, r(1_001_000), 60_000); // a minute later (exporter restarted meanwhile)
  assert.equal(e.total(0), 1000);
  e.observe(0, r(250), 61_000); // below the last: the driver was reloaded, counting from 0
  assert.equal(e.total(0), 1250);
  // A GPU that integrated power until the counter appeared: the counter takes over, no interval counted twice.
  const m = new GpuEnergy();
  m.observe(1, r(null, 100), 0);
  m.observe(1, r(null, 100), 1000);
  assert.equal(m.total(1), 100);
  m.observe(1, r(5000, 100), 2000);
  assert.equal(m.total(1), 100, 'the counter\'s first value is a baseline');
  m.observe(1, r(null, 100), 3000);
  assert.equal(m.total(1), 100, 'from now on power alone adds nothing');
  m.observe(1, r(5300, 100), 4000);
  assert.deepEqual([m.total(1), m.source(1)], [400, 'driver_counter']);
});

test('the counter series (infermeter_gpu_energy_joules_total{gpu}) equals the total, survives the GPU\'s removal, and the snapshot carries it', async () => {
  const registry = new Registry();
  const machine = new MachineSnapshot();
  const series = new GpuSeries(registry, machine);
  const sample = (watts: number) => ({ gpu: 2, values: new Map<string, number | null>([[POWER, watts]]) });
  const energy = async () => parsePrometheusText(await registry.metrics()).samples.filter((s) => s.name === 'infermeter_gpu_energy_joules_total');
  series.publish(sample(200), undefined, 0);
  assert.deepEqual((await energy()).map((s) => [s.labels, s.value]), [[{ gpu: '2' }, 0]]);
  series.publish(sample(200), undefined, 3000);
  assert.equal((await energy())[0]!.value, 600);
  assert.deepEqual([machine.read().gpus[0]!.energyJoules, machine.read().gpus[0]!.energySource], [600, 'power']);
  series.remove(2); // silent for three intervals: every series of the GPU goes
  assert.deepEqual(await energy(), []);
  series.publish(sample(200), undefined, 5000);
  assert.equal((await energy())[0]!.value, 1000, 'back with the gap bridged and nothing lost');
  // dcgm-exporter's counter on another GPU: its increases, in joules.
  series.publish({ gpu: 3, values: new Map([[POWER, 400]]), counterJoules: 900_000 }, undefined, 0);
  series.publish({ gpu: 3, values: new Map([[POWER, 400]]), counterJoules: 900_123.5 }, undefined, 1000);
  assert.equal((await energy()).find((s) => s.labels['gpu'] === '3')!.value, 123.5);
  assert.equal(machine.read().gpus.find((g) => g.index === 3)!.energySource, 'driver_counter');
});
