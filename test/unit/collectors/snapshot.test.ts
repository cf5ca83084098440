/**
 * src/collectors/snapshot.ts: the machine snapshot. Every gauge a collector sets has its
 * field; a GPU sample and an engine scrape give the snapshot the numbers the gauges show
 * (one measurement feeds both); a part leaves when its series leave; the join is applied
 * to GPUs and engines on read.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Registry } from 'prom-client';
import { MachineSnapshot } from '../../../src/collectors/snapshot.js';
import { GPU_FIELDS, type GpuField } from '../../../src/collectors/gpu/fields.js';
import { GPU_SAMPLE_METRICS } from '../../../src/collectors/gpu/columns.js';
import { DCGM_ALIASES } from '../../../src/collectors/gpu/dcgm-aliases.js';
import { GpuSeries } from '../../../src/collectors/gpu/series.js';
import { ENGINE_FIELDS, ENGINE_HISTOGRAM_FIELDS } from '../../../src/collectors/engine/fields.js';
import { ENGINE_METRICS, aliasTable } from '../../../src/collectors/engine/aliases.js';
import { normalizeScrape } from '../../../src/collectors/engine/collector.js';
import { engineReading } from '../../../src/collectors/engine/reading.js';
import { parsePrometheusText } from '../../../src/lib/prom-text.js';
import { engineOf, gpuOf } from '../../helpers/machine.js';

const fixture = (name: string) => readFileSync(new URL(`../../../../test/fixtures/${name}`, import.meta.url), 'utf8');

test('every per-GPU gauge (dmon columns and dcgm-exporter aliases) has exactly one field; every engine family one, histograms apart', () => {
  assert.deepEqual(Object.values(GPU_FIELDS).sort(), GPU_SAMPLE_METRICS.map((d) => d.name).sort());
  for (const metric of Object.keys(DCGM_ALIASES)) assert.ok((Object.values(GPU_FIELDS) as string[]).includes(metric), metric);
  assert.deepEqual([...Object.values(ENGINE_FIELDS), ...Object.values(ENGINE_HISTOGRAM_FIELDS)].sort(), ENGINE_METRICS.map((d) => d.name).sort());
  for (const metric of Object.values(ENGINE_HISTOGRAM_FIELDS)) assert.equal(ENGINE_METRICS.find((d) => d.name === metric)!.type, 'histogram', metric);
  for (const metric of Object.values(ENGINE_FIELDS)) assert.notEqual(ENGINE_METRICS.find((d) => d.name === metric)!.type, 'histogram', metric);
});

const facts = { index: 3, uuid: 'GPU-c', name: 'NVIDIA H100 80GB HBM3', driverVersion: '550.54', pciBusId: '00000000:30:00.0', memoryTotalBytes: 85e9 };

test('a GPU sample sets its gauges and its snapshot part alike; a value gone, a relabel and a removal follow the series', async () => {
  const registry = new Registry();
  const machine = new MachineSnapshot();
  const series = new GpuSeries(registry, machine);
  const values = new Map<string, number | null>(GPU_SAMPLE_METRICS.map((d, i) => [d.name, i + 0.5]));
  series.publish({ gpu: 3, values }, facts, 1234);
  const gauges = parsePrometheusText(await registry.metrics()).samples.filter((s) => s.labels['gpu'] === '3');
  const [g] = machine.read().gpus;
  for (const [field, metric] of Object.entries(GPU_FIELDS) as [GpuField, string][]) {
    assert.equal(g![field], gauges.find((s) => s.name === metric)!.value, field);
  }
  assert.deepEqual([g!.index, g!.uuid, g!.name, g!.memoryTotalBytes, g!.at], [3, 'GPU-c', 'NVIDIA H100 80GB HBM3', 85e9, 1234]);

  values.set(GPU_FIELDS.powerWatts, null);
  values.set(GPU_FIELDS.smClockHz, NaN);
  series.publish({ gpu: 3, values }, facts, 2000);
  const after = parsePrometheusText(await registry.metrics()).samples;
  assert.equal(after.filter((s) => s.name === GPU_FIELDS.powerWatts).length, 0, 'no value, no series');
  assert.equal(machine.read().gpus[0]!.powerWatts, null, 'and no field');
  assert.equal(machine.read().gpus[0]!.smClockHz, null, 'NaN is no value to a reader');

  series.publish({ gpu: 0, values }, undefined, 2000);
  assert.deepEqual(machine.read().gpus.map((x) => [x.index, x.uuid, x.name]), [[3, 'GPU-c', 'NVIDIA H100 80GB HBM3'], [0, '', null]], 'before its facts: no uuid, no name');
  series.remove(3);
  assert.deepEqual(machine.read().gpus.map((x) => x.index), [0], 'a GPU whose series are removed leaves the snapshot');
});

test('an engine scrape gives the reading the normalized families hold: counters, gauges and histograms with their buckets', () => {
  const families = normalizeScrape(fixture('vllm-v0-metrics-0.10-cpu-full.prom'), aliasTable('vllm')!, 'vllm');
  const e = engineReading(families, 'a', 'vllm', 77);
  assert.deepEqual([e.upstream, e.engine, e.at], ['a', 'vllm', 77]);
  for (const [field, metric] of Object.entries(ENGINE_FIELDS)) {
    assert.equal(e[field as keyof typeof ENGINE_FIELDS], families.get(metric)?.[0]?.value ?? null, field);
  }
  assert.equal(e.promptTokensTotal, 43952);
  const ttft = e.histograms.timeToFirstToken!;
  assert.equal(ttft.count, 69);
  assert.equal(ttft.buckets.find((b) => b.le === 2.5)!.count, 16);
  assert.equal(ttft.buckets.at(-1)!.le, Infinity);
  assert.equal(ttft.sum, families.get(ENGINE_HISTOGRAM_FIELDS.timeToFirstToken)!.find((v) => v.metricName?.endsWith('_sum'))!.value);
});

test('read() ties GPUs and engines through the join; no join: no upstreams, no GPUs', () => {
  const machine = new MachineSnapshot();
  machine.setGpu(gpuOf(0, { utilization: 0.5 }));
  machine.setGpu(gpuOf(1, { utilization: 0.7 }));
  machine.setEngine(engineOf('a', { running: 3 }));
  machine.setEngine(engineOf('b', { running: 1 }));
  assert.deepEqual(machine.read().gpus.map((g) => g.upstreams), [[], []]);
  machine.setGpuEngines({ rows: [{ gpu: 0, uuid: 'GPU-0', upstream: 'a' }, { gpu: 1, uuid: 'GPU-1', upstream: 'a' }, { gpu: 1, uuid: 'GPU-1', upstream: 'b' }], at: 5 });
  const m = machine.read();
  assert.deepEqual(m.gpus.map((g) => [g.index, g.upstreams]), [[0, ['a']], [1, ['a', 'b']]]);
  assert.deepEqual(m.engines.map((e) => [e.upstream, e.gpus]), [['a', [0, 1]], ['b', [1]]]);
  machine.removeEngine('a');
  machine.setGpuEngines(null);
  assert.deepEqual(machine.read().engines.map((e) => [e.upstream, e.gpus]), [['b', []]]);
  assert.equal(machine.read().gpuEngines, null);
});
