/**
 * What the status page shows of the machine, read from the collectors' snapshot
 * (collectors/snapshot.ts): its GPUs, the engines taken together, and collector health.
 * Whatever fills the snapshot (nvidia-smi dmon, dcgm-exporter, any engine's aliases) shows
 * up here alike. The figures are those /metrics shows: the snapshot and the gauges are set
 * from the same reading.
 */
import type { EngineReading, MachineState } from '../../collectors/snapshot.js';

export interface GpuStatus {
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

/** The GPU figures shown on the page; a GPU with none of them is not shown. */
const GPU_STATUS_FIELDS = ['utilization', 'memoryUsedBytes', 'memoryTotalBytes', 'powerWatts', 'temperatureCelsius', 'smActive', 'smOccupancy', 'tensorActive', 'dramActive'] as const;

/** At most this many GPUs on the page (a dmon group is 16; a node has 8). */
export const MAX_GPUS = 64;

export function readGpus(m: MachineState): GpuStatus[] {
  const joined = (m.gpuEngines?.rows.length ?? 0) > 0;
  const shown = m.gpus.filter((g) => GPU_STATUS_FIELDS.some((f) => g[f] !== null));
  return shown.sort((a, b) => a.index - b.index).slice(0, MAX_GPUS).map((g) => ({
    gpu: String(g.index), name: g.name || null,
    utilization: g.utilization, memoryUsedBytes: g.memoryUsedBytes, memoryTotalBytes: g.memoryTotalBytes, powerWatts: g.powerWatts, temperatureCelsius: g.temperatureCelsius,
    smActive: g.smActive, smOccupancy: g.smOccupancy, tensorActive: g.tensorActive, dramActive: g.dramActive,
    ...(joined ? { upstreams: [...g.upstreams] } : {}),
  }));
}

/** Every engine together: what the page's machine-wide engine panel shows. */
export type EngineTotals = Pick<EngineReading, 'kvCacheUsage' | 'running' | 'waiting' | 'preemptionsTotal' | 'prefixCacheHitsTotal' | 'prefixCacheQueriesTotal' | 'prefixCacheHitRatio'>;

/** Counts add up over the engines; ratios are their mean (null: no engine has the figure). */
export function readEngine(m: MachineState): EngineTotals {
  const over = (f: keyof EngineTotals, how: 'mean' | 'sum'): number | null => {
    const xs = m.engines.map((e) => e[f]).filter((v): v is number => v !== null);
    if (xs.length === 0) return null;
    const s = xs.reduce((a, v) => a + v, 0);
    return how === 'mean' ? s / xs.length : s;
  };
  return {
    kvCacheUsage: over('kvCacheUsage', 'mean'), running: over('running', 'sum'), waiting: over('waiting', 'sum'), preemptionsTotal: over('preemptionsTotal', 'sum'),
    prefixCacheHitsTotal: over('prefixCacheHitsTotal', 'sum'), prefixCacheQueriesTotal: over('prefixCacheQueriesTotal', 'sum'), prefixCacheHitRatio: over('prefixCacheHitRatio', 'mean'),
  };
}

export interface CollectorStatus {
  name: string;
  /** Every instance of it (the engine collector: one per upstream) is up. */
  up: boolean;
  /** Unix ms of the last success, null if never. */
  lastSuccessAt: number | null;
  durationSeconds: number | null;
}

/** One row per collector name, sorted; an engine collector's instances averaged, as the page has always shown them. */
export function readCollectors(m: MachineState): CollectorStatus[] {
  const byName = new Map<string, MachineState['collectors'][number][]>();
  for (const h of m.collectors) byName.set(h.collector, [...(byName.get(h.collector) ?? []), h]);
  const mean = (xs: number[]) => (xs.length ? xs.reduce((a, v) => a + v, 0) / xs.length : null);
  return [...byName.keys()].sort().map((name) => {
    const hs = byName.get(name)!;
    // Averaged in seconds, as infermeter_collector_last_success_timestamp_seconds holds it.
    const last = mean(hs.filter((h) => h.lastSuccessAt !== null).map((h) => h.lastSuccessAt! / 1000));
    return {
      name, up: hs.every((h) => h.up), lastSuccessAt: last === null ? null : Math.round(last * 1000),
      durationSeconds: mean(hs.filter((h) => h.durationSeconds !== null).map((h) => h.durationSeconds!)),
    };
  });
}
