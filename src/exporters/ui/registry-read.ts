/**
 * What the collectors last published, read back from the registry they publish into (the
 * metric objects' values, never rendered text): GPUs, the engine and collector health.
 * Whatever fills these gauges (nvidia-smi dmon, dcgm-exporter, any engine alias) shows up
 * here alike, and labels this code does not know about are summed or averaged away.
 */
import type { Registry } from 'prom-client';
import { M } from '../../slo/names.js';

type Labels = Record<string, string | number>;
interface Value {
  labels: Labels;
  value: number;
}

async function values(registry: Registry, name: string): Promise<Value[]> {
  const metric = registry.getSingleMetric(name);
  if (!metric) return [];
  const got = (await metric.get()) as { values: Value[] };
  return got.values.filter((v) => Number.isFinite(v.value));
}

/** One value per distinct `label` value: the mean (ratios) or the sum (counts) of its series. */
async function byLabel(registry: Registry, name: string, label: string, how: 'mean' | 'sum' = 'mean'): Promise<Map<string, number>> {
  const acc = new Map<string, { sum: number; n: number }>();
  for (const v of await values(registry, name)) {
    const key = String(v.labels[label] ?? '');
    const a = acc.get(key) ?? { sum: 0, n: 0 };
    a.sum += v.value;
    a.n++;
    acc.set(key, a);
  }
  return new Map([...acc].map(([k, a]) => [k, how === 'mean' ? a.sum / a.n : a.sum]));
}

/** Every series of `name` added up (null: no series). */
async function total(registry: Registry, name: string, how: 'mean' | 'sum' = 'sum'): Promise<number | null> {
  const vs = await values(registry, name);
  if (vs.length === 0) return null;
  const s = vs.reduce((a, v) => a + v.value, 0);
  return how === 'mean' ? s / vs.length : s;
}

export interface GpuReading {
  gpu: string;
  name: string | null;
  utilization: number | null;
  memoryUsedBytes: number | null;
  memoryTotalBytes: number | null;
  powerWatts: number | null;
  temperatureCelsius: number | null;
  /** GPM / DCGM profiling ratios, when the GPU collector has them. */
  smActive: number | null;
  smOccupancy: number | null;
  tensorActive: number | null;
  dramActive: number | null;
  /** The upstreams this GPU serves (infermeter_gpu_engine_info), in configured order; empty: tied to none. */
  upstreams?: string[];
}

/** GPU gauges shown on the page, by field. */
const GPU_FIELDS = {
  utilization: M.gpuUtil,
  memoryUsedBytes: M.gpuMemUsed,
  memoryTotalBytes: M.gpuMemTotal,
  powerWatts: M.gpuPower,
  temperatureCelsius: M.gpuTemp,
  smActive: M.gpuSmActive,
  smOccupancy: M.gpuSmOccupancy,
  tensorActive: M.gpuTensor,
  dramActive: M.gpuDram,
} as const;

/** At most this many GPUs on the page (a dmon group is 16; a node has 8). */
export const MAX_GPUS = 64;

export async function readGpus(registry: Registry): Promise<GpuReading[]> {
  const fields = await Promise.all(Object.entries(GPU_FIELDS).map(async ([k, name]) => [k, await byLabel(registry, name, 'gpu')] as const));
  const names = new Map<string, string>();
  for (const v of await values(registry, 'infermeter_gpu_info')) names.set(String(v.labels['gpu']), String(v.labels['name'] ?? ''));
  const engines = new Map<string, string[]>();
  for (const v of await values(registry, 'infermeter_gpu_engine_info')) {
    const gpu = String(v.labels['gpu']);
    engines.set(gpu, [...(engines.get(gpu) ?? []), String(v.labels['upstream'])]);
  }
  const ids = new Set<string>();
  for (const [, m] of fields) for (const id of m.keys()) ids.add(id);
  const sorted = [...ids].sort((a, b) => Number(a) - Number(b) || a.localeCompare(b)).slice(0, MAX_GPUS);
  return sorted.map((gpu) => {
    const r: Record<string, unknown> = { gpu, name: names.get(gpu) || null };
    for (const [k, m] of fields) r[k] = m.get(gpu) ?? null;
    if (engines.size > 0) r['upstreams'] = engines.get(gpu) ?? [];
    return r as unknown as GpuReading;
  });
}

export interface EngineReading {
  kvCacheUsage: number | null;
  running: number | null;
  waiting: number | null;
  preemptionsTotal: number | null;
  prefixCacheHitsTotal: number | null;
  prefixCacheQueriesTotal: number | null;
  /** The engine's own ratio (since it started), for engines without the two counters. */
  prefixCacheHitRatio: number | null;
}

export async function readEngine(registry: Registry): Promise<EngineReading> {
  const [kv, running, waiting, preempt, hits, queries, ratio] = await Promise.all([
    total(registry, M.kvCache, 'mean'), total(registry, M.running), total(registry, M.waiting), total(registry, M.preemptions),
    total(registry, M.prefixHits), total(registry, M.prefixQueries), total(registry, 'infermeter_engine_prefix_cache_hit_ratio', 'mean'),
  ]);
  return { kvCacheUsage: kv, running, waiting, preemptionsTotal: preempt, prefixCacheHitsTotal: hits, prefixCacheQueriesTotal: queries, prefixCacheHitRatio: ratio };
}

export interface CollectorReading {
  name: string;
  up: boolean;
  /** Unix ms of the last success, null if never. */
  lastSuccessAt: number | null;
  durationSeconds: number | null;
}

export async function readCollectors(registry: Registry): Promise<CollectorReading[]> {
  const [up, last, duration] = await Promise.all([
    byLabel(registry, M.collectorUp, 'collector'), byLabel(registry, M.collectorLastSuccess, 'collector'), byLabel(registry, 'infermeter_collector_duration_seconds', 'collector'),
  ]);
  return [...up.keys()].sort().map((name) => ({
    name, up: up.get(name) === 1, lastSuccessAt: last.has(name) ? Math.round(last.get(name)! * 1000) : null, durationSeconds: duration.get(name) ?? null,
  }));
}
