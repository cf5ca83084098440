/**
 * What the status page shows of the machine, read from the collectors' snapshot
 * (collectors/snapshot.ts): its GPUs, each upstream's engine and the engines taken together,
 * and the health of every collector instance.
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
  /** The upstream this instance reads (the engine collector runs one per upstream); null for the others. */
  upstream: string | null;
  /** Its last run succeeded. */
  up: boolean;
  /** Unix ms of the last success, null if never. */
  lastSuccessAt: number | null;
  durationSeconds: number | null;
}

/**
 * One row per collector instance, as infermeter_collector_up has one series each: by name,
 * then in the order they were started (the engine collector's: the upstreams' configured order).
 */
export function readCollectors(m: MachineState): CollectorStatus[] {
  const rows = m.collectors.map((h) => ({ name: h.collector, upstream: h.upstream, up: h.up, lastSuccessAt: h.lastSuccessAt, durationSeconds: h.durationSeconds }));
  return rows.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** One upstream's engine as its panel shows it: its figures (null while its /metrics does not answer) and its collector's health. */
export interface UpstreamEngine extends EngineTotals {
  upstream: string;
  /** Its engine kind as last read (null: never read). */
  engine: string | null;
  /** Its engine collector's last run succeeded. */
  up: boolean;
}

/**
 * Every upstream the engine collector reads, in configured order, whether its last scrape
 * answered or not: a dead engine keeps its panel, named and down, with no figures.
 */
export function readEngines(m: MachineState): UpstreamEngine[] {
  const readings = new Map(m.engines.map((e) => [e.upstream, e]));
  const health = new Map<string, boolean>();
  for (const h of m.collectors) if (h.collector === 'engine' && h.upstream !== null) health.set(h.upstream, h.up);
  // A reading with no health beside it (a snapshot filled by hand) was read, so it is up.
  for (const e of m.engines) if (!health.has(e.upstream)) health.set(e.upstream, true);
  return [...health].map(([upstream, up]) => {
    const e = readings.get(upstream);
    return {
      upstream, engine: e?.engine ?? null, up,
      kvCacheUsage: e?.kvCacheUsage ?? null, running: e?.running ?? null, waiting: e?.waiting ?? null, preemptionsTotal: e?.preemptionsTotal ?? null,
      prefixCacheHitsTotal: e?.prefixCacheHitsTotal ?? null, prefixCacheQueriesTotal: e?.prefixCacheQueriesTotal ?? null, prefixCacheHitRatio: e?.prefixCacheHitRatio ?? null,
    };
  });
}
