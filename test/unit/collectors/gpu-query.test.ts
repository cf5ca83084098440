import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parseGpuFacts, parseQueryCsv, queryNumber } from '../../../src/collectors/gpu/query.js';
import { MIB } from '../../../src/collectors/gpu/columns.js';

const fixture = (name: string) => readFileSync(new URL(`../../../../test/fixtures/${name}`, import.meta.url), 'utf8');

const WIDE = ['index', 'uuid', 'name', 'pci.bus_id', 'driver_version', 'utilization.gpu', 'utilization.memory', 'memory.total', 'memory.used', 'memory.free',
  'temperature.gpu', 'temperature.memory', 'power.draw', 'power.limit', 'clocks.gr', 'clocks.mem', 'clocks.max.gr', 'clocks.max.mem', 'fan.speed', 'pstate',
  'pcie.link.gen.current', 'pcie.link.width.current', 'encoder.stats.sessionCount'];

test('query fixture: noheader,nounits, 4 GPUs, N/A memory temperature', () => {
  const t = parseQueryCsv(fixture('nvidia-smi-query-gpu-noheader-nounits-4gpu-r595.csv'), WIDE);
  assert.equal(t.error, null);
  assert.equal(t.invalidLines, 0);
  assert.equal(t.rows.length, 4);
  const col = (f: string) => WIDE.indexOf(f);
  const r = t.rows[2]!;
  assert.equal(r[col('uuid')], 'GPU-d9a18a51-6b47-71b3-44aa-dfd4448a0e88');
  assert.equal(r[col('name')], 'NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition');
  assert.equal(r[col('pci.bus_id')], '00000000:81:00.0');
  assert.equal(r[col('temperature.memory')], null);
  assert.equal(queryNumber(r[col('power.draw')]!), 299.95);
  assert.equal(r[col('pstate')], 'P1');
});

test('query fixture: header with units, values with units', () => {
  const fields = ['timestamp', 'pstate', 'temperature.gpu', 'utilization.gpu', 'utilization.memory', 'memory.total', 'memory.free', 'memory.used'];
  const t = parseQueryCsv(fixture('nvidia-smi-query-gpu-lms-header-units.csv'), fields);
  assert.deepEqual(t.fields, fields);
  assert.deepEqual(t.units, [null, null, null, '%', '%', 'MiB', 'MiB', 'MiB']);
  assert.equal(t.rows.length, 5);
  assert.equal(queryNumber(t.rows[0]![5]!), 23028);
  assert.equal(queryNumber(t.rows[0]![3]!), 0);
  assert.equal(t.rows[0]![0], '2024/01/16 14:44:16.977');
});

test('query fixture: hex throttle reasons, [N/A], text values', () => {
  const fields = ['index', 'power.draw.average', 'power.draw.instant', 'clocks_throttle_reasons.active', 'memory.reserved', 'ecc.mode.current', 'mig.mode.current'];
  const t = parseQueryCsv(fixture('nvidia-smi-query-gpu-power-throttle-mig-4gpu-r595.csv'), fields);
  assert.equal(t.rows.length, 4);
  assert.equal(queryNumber(t.rows[0]![3]!), 4);
  assert.equal(t.rows[0]![5], 'Disabled');
  assert.equal(t.rows[0]![6], null);
  assert.equal(queryNumber(t.rows[1]![1]!), 289.76);
});

test('query fixture: an invalid field is reported as an error, not as data', () => {
  const t = parseQueryCsv(fixture('nvidia-smi-query-gpu-invalid-field-error.txt'), ['bogus.field']);
  assert.match(t.error!, /not a valid field/);
  assert.equal(t.rows.length, 0);
});

test('static facts from the wide fixture (fields reordered to what the collector asks)', () => {
  const text = fixture('nvidia-smi-query-gpu-noheader-nounits-4gpu-r595.csv');
  // The collector asks index,uuid,name,driver_version,pci.bus_id,memory.total; build that view of the same rows.
  const wide = parseQueryCsv(text, WIDE);
  const pick = ['index', 'uuid', 'name', 'driver_version', 'pci.bus_id', 'memory.total'].map((f) => WIDE.indexOf(f));
  const narrow = wide.rows.map((r) => pick.map((i) => r[i]).join(', ')).join('\n');
  const { facts, error } = parseGpuFacts(narrow);
  assert.equal(error, null);
  assert.equal(facts.length, 4);
  assert.deepEqual(facts[3], {
    index: 3, uuid: 'GPU-e3bec724-5bbb-759f-fdfd-e690b400593f', name: 'NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition',
    driverVersion: '595.91.07', pciBusId: '00000000:C1:00.0', memoryTotalBytes: 97887 * MIB,
  });
});

test('static facts with header and units, and with [N/A] memory', () => {
  const text = 'index, uuid, name, driver_version, pci.bus_id, memory.total [MiB]\n0, GPU-1, NVIDIA L4, 550.54.15, 00000000:00:03.0, 23034 MiB\n1, GPU-2, NVIDIA L4, 550.54.15, 00000000:00:04.0, [N/A]\n';
  const { facts } = parseGpuFacts(text);
  assert.equal(facts.length, 2);
  assert.equal(facts[0]!.memoryTotalBytes, 23034 * MIB);
  assert.equal(facts[1]!.memoryTotalBytes, null);
});

test('queryNumber', () => {
  assert.equal(queryNumber('0x0000000000000004'), 4);
  assert.equal(queryNumber('300.00 W'), 300);
  assert.equal(queryNumber('0 %'), 0);
  assert.equal(queryNumber(null), null);
  assert.equal(queryNumber('P1'), null);
});
