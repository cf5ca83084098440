import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { GpuSeries } from '../../../src/collectors/gpu/series.js';
import { catalog } from '../../../src/metrics/catalog.js';
import { DMON_COLUMNS, GPU_METRICS } from '../../../src/collectors/gpu/columns.js';
import { parsePrometheusText } from '../../../src/lib/prom-text.js';

const POWER = 'infermeter_gpu_power_watts';
const TEMP = 'infermeter_gpu_memory_temperature_celsius';
const facts = { index: 0, uuid: 'GPU-a', name: 'NVIDIA L4', driverVersion: '550', pciBusId: '00000000:00:03.0', memoryTotalBytes: 1024 };

async function samples(r: Registry) {
  return parsePrometheusText(await r.metrics()).samples;
}

test('series published before the facts are replaced (not duplicated) once the uuid is known', async () => {
  const r = new Registry();
  const s = new GpuSeries(r);
  s.publish({ gpu: 0, values: new Map([[POWER, 100]]) }, undefined);
  assert.deepEqual((await samples(r)).filter((x) => x.name === POWER).map((x) => x.labels), [{ gpu: '0', uuid: '' }]);
  s.publish({ gpu: 0, values: new Map([[POWER, 101]]) }, facts);
  const after = await samples(r);
  assert.deepEqual(after.filter((x) => x.name === POWER).map((x) => [x.labels['uuid'], x.value]), [['GPU-a', 101]]);
  assert.equal(after.filter((x) => x.name === 'infermeter_gpu_info').length, 1);
  assert.equal(after.find((x) => x.name === 'infermeter_gpu_memory_total_bytes')?.value, 1024);
});

test('a value that turns into "no value" loses its series; remove() drops every series of the GPU', async () => {
  const r = new Registry();
  const s = new GpuSeries(r);
  s.publish({ gpu: 0, values: new Map([[POWER, 100], [TEMP, 50]]) }, facts);
  s.publish({ gpu: 0, values: new Map([[POWER, 100], [TEMP, null]]) }, facts);
  assert.equal((await samples(r)).filter((x) => x.name === TEMP).length, 0);
  s.remove(0);
  assert.equal((await samples(r)).filter((x) => x.name.startsWith('infermeter_gpu_')).length, 0);
  assert.deepEqual(s.gpus(), []);
});

test('the catalog lists every GPU metric once, with base-unit names and gpu/uuid labels', () => {
  const names = catalog().map((m) => m.name);
  for (const m of GPU_METRICS) assert.equal(names.filter((n) => n === m.name).length, 1, m.name);
  for (const c of DMON_COLUMNS) {
    assert.match(c.metric, /^infermeter_gpu_[a-z0-9_]+$/);
    const def = GPU_METRICS.find((m) => m.name === c.metric)!;
    assert.deepEqual(def.labels, ['gpu', 'uuid']);
    if (c.unit === '%') assert.ok(c.metric.endsWith('_ratio') && c.scale === 0.01, c.column);
    if (c.unit === 'MB') assert.ok(c.metric.endsWith('_bytes') && c.scale === 1048576, c.column);
    if (c.unit === 'MHz') assert.ok(c.metric.endsWith('_hertz') && c.scale === 1e6, c.column);
    if (c.unit === 'C') assert.ok(c.metric.endsWith('_celsius'), c.column);
    if (c.unit === 'W') assert.ok(c.metric.endsWith('_watts'), c.column);
  }
});
