import { test } from 'node:test';
import assert from 'node:assert/strict';
import { dmonCommands, gpmIdsFor, parseDmonHelp } from '../../../src/collectors/gpu/plan.js';
import { GpmProbe, GPM_PROBE_SAMPLES } from '../../../src/collectors/gpu/gpm.js';
import { dmonHelp, driverCaps } from '../../../src/sim/gpu/driver.js';

const base = { columns: 'pucvmet', intervalSeconds: 1, gpmIds: [], gpmOptions: false };

test('dmon commands: one child up to 16 GPUs, then one per group of 16 with -i', () => {
  assert.deepEqual(dmonCommands({ ...base, gpuCount: null }), [['dmon', '-s', 'pucvmet', '-o', 'T', '-d', '1']]);
  assert.deepEqual(dmonCommands({ ...base, gpuCount: 16 }).length, 1);
  const groups = dmonCommands({ ...base, gpuCount: 40 });
  assert.equal(groups.length, 3);
  assert.deepEqual(groups.map((g) => g.slice(-2)), [
    ['-i', Array.from({ length: 16 }, (_, i) => i).join(',')],
    ['-i', Array.from({ length: 16 }, (_, i) => i + 16).join(',')],
    ['-i', Array.from({ length: 8 }, (_, i) => i + 32).join(',')],
  ]);
});

test('dmon commands: --gpm-metrics, and --gpm-options d where the driver has it', () => {
  assert.deepEqual(dmonCommands({ ...base, gpuCount: 8, gpmIds: [2, 3, 5, 10], gpmOptions: true }),
    [['dmon', '-s', 'pucvmet', '-o', 'T', '-d', '1', '--gpm-metrics', '2,3,5,10', '--gpm-options', 'd']]);
  assert.deepEqual(dmonCommands({ ...base, gpuCount: 8, gpmIds: [2, 3, 5, 10], gpmOptions: false })[0]!.slice(7), ['--gpm-metrics', '2,3,5,10']);
});

test('dmon -h: GPM ids by driver branch (the fake\'s help text), both "name = id" and "id - name" forms', () => {
  const r550 = parseDmonHelp(dmonHelp(driverCaps('550.127.05', {})));
  assert.equal(r550.gpmMetrics, true);
  assert.equal(r550.gpmOptions, true);
  assert.deepEqual(gpmIdsFor(r550), [2, 3, 5, 10, 20, 21, 60, 61]);
  const r535 = parseDmonHelp(dmonHelp(driverCaps('535.183.01', {})));
  assert.deepEqual([r535.gpmMetrics, r535.gpmOptions], [true, false]);
  const r525 = parseDmonHelp(dmonHelp(driverCaps('525.147.05', {})));
  assert.deepEqual(gpmIdsFor(r525), []);
  const dashed = parseDmonHelp('  --gpm-metrics  ids\n     2 - SM Activity\n     3 - SM Occupancy\n    10 - DRAM Activity\n    20 - PCIe TX\n');
  assert.deepEqual(gpmIdsFor(dashed), [2, 3, 10, 20]);
  // A help that names the option but lists no ids in a known form: the four documented ones.
  assert.deepEqual(gpmIdsFor(parseDmonHelp('    --gpm-metrics   Comma-separated list of GPM metrics\n')), [2, 3, 5, 10]);
});

const sample = (gpu: number, v: number | null) => ({ gpu, values: new Map([['infermeter_gpu_power_watts', 100], ['infermeter_gpu_sm_occupancy_ratio', v]]) });

test('GPM probe: "-" in the first samples is normal; a value enables, staying "-" gives up; a rejecting driver gives up', () => {
  const ok = new GpmProbe(true);
  assert.equal(ok.sample(sample(0, null)), false);
  assert.equal(ok.sample(sample(0, 0.3)), false);
  assert.equal(ok.status, 'enabled');
  for (let i = 0; i < 20; i++) ok.sample(sample(0, null));
  assert.equal(ok.status, 'enabled', 'once seen, kept');

  const none = new GpmProbe(true);
  const results = Array.from({ length: GPM_PROBE_SAMPLES }, () => none.sample(sample(0, null)));
  assert.deepEqual(results, [...Array(GPM_PROBE_SAMPLES - 1).fill(false), true]);
  assert.deepEqual([none.status, none.reason], ['unavailable', 'no_values']);
  const noColumns = new GpmProbe(true);
  for (let i = 0; i < GPM_PROBE_SAMPLES; i++) noColumns.sample({ gpu: 0, values: new Map([['infermeter_gpu_power_watts', 1]]) });
  assert.equal(noColumns.status, 'unavailable');

  const rejected = new GpmProbe(true);
  assert.equal(rejected.exitedBeforeSample(0), false);
  assert.equal(rejected.exitedBeforeSample(2), true);
  assert.deepEqual([rejected.status, rejected.reason], ['unavailable', 'rejected']);
  assert.deepEqual([new GpmProbe(false).status, new GpmProbe(false).reason], ['unavailable', 'not_in_help']);
});
