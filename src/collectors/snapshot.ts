/**
 * The machine as the collectors last read it: one typed snapshot, owned by the collector
 * runner (runner.ts) and handed to whoever reads machine state (the status page, the
 * bottleneck verdict; docs/architecture.md, "The machine snapshot"). Readers read fields
 * (`gpu.powerWatts`, `engine.kvCacheUsage`), never prom-client's registry by metric name.
 *
 * One measurement feeds both the gauges and the snapshot: each collector's writer
 * (gpu/series.ts, the engine and host collectors, the GPU-engine join, host/proxy-loop.ts,
 * the runner's health) sets its gauges and its part here from the same reading, in the same
 * call. A part leaves the snapshot when its gauges leave /metrics (a GPU silent for three
 * intervals, an engine whose scrape failed), so readers see what /metrics shows. Every part
 * carries `at`, the Unix ms it was read, so a reader can tell how old it is.
 */
import type { EngineCacheConfig } from './engine/cache-config.js';
import type { EngineField, EngineHistogramField } from './engine/fields.js';
import type { GpuField } from './gpu/fields.js';
import type { EnergySource } from './gpu/energy.js';

/** A value in base units; null: the source printed none (or not a finite number). */
type Values<K extends string> = { readonly [F in K]: number | null };

export interface GpuReading extends Values<GpuField> {
  readonly index: number;
  /** '' until `--query-gpu` (or dcgm-exporter's labels) named it. */
  readonly uuid: string;
  /** The static facts, null until they are known. */
  readonly name: string | null;
  readonly driverVersion: string | null;
  readonly pciBusId: string | null;
  readonly memoryTotalBytes: number | null;
  /** The GPU-engine join's upstreams for this GPU, in configured order; empty: tied to none, or no join. */
  readonly upstreams: readonly string[];
  /** Joules since infermeter started counting, as infermeter_gpu_energy_joules_total shows them (gpu/energy.ts); null: no power and no energy counter read. */
  readonly energyJoules: number | null;
  /** Where energyJoules comes from: the driver's own counter, or the power reading integrated. */
  readonly energySource: EnergySource | null;
  /** Unix ms energyJoules counts from (the GPU's first reading): a reader's first span starts there, so nothing is lost. */
  readonly energySince: number | null;
  /** Unix ms the sample was read (dmon printed it, or dcgm-exporter answered). */
  readonly at: number;
}

/** An engine histogram with the engine's own buckets (cumulative counts, `le` in seconds, +Inf last). */
export interface HistogramReading {
  readonly sum: number | null;
  readonly count: number | null;
  readonly buckets: readonly { readonly le: number; readonly count: number }[];
}

/** One upstream's engine, normalized (engine/aliases.ts): the one reading of an engine every reader shares. */
export interface EngineReading extends Values<EngineField> {
  /** The upstream's configured name (the `upstream` label). */
  readonly upstream: string;
  /** Its engine kind (the `engine` label). */
  readonly engine: string;
  readonly histograms: { readonly [F in EngineHistogramField]: HistogramReading | null };
  /** Its KV cache as it reports it (block size, size, prefix caching); null: it reports none. */
  readonly cacheConfig: EngineCacheConfig | null;
  /** GPU indexes the GPU-engine join ties to this upstream; empty: none, or no join. */
  readonly gpus: readonly number[];
  /** Unix ms of the scrape. */
  readonly at: number;
}

/** One row of `infermeter_gpu_engine_info`: this GPU serves this upstream. */
export interface GpuEngineRow {
  readonly gpu: number;
  readonly uuid: string;
  readonly upstream: string;
}

export interface GpuEngineJoin {
  /** By GPU index, then upstream in configured order. */
  readonly rows: readonly GpuEngineRow[];
  readonly at: number;
}

export interface NetworkReading {
  readonly device: string;
  /** null on the first reading: a rate needs two. */
  readonly receiveBytesPerSecond: number | null;
  readonly transmitBytesPerSecond: number | null;
}

export interface HostReading {
  readonly cpuUtilization: number;
  readonly load1: number;
  readonly load5: number;
  readonly load15: number;
  readonly memoryUsedBytes: number;
  readonly memoryTotalBytes: number;
  readonly network: readonly NetworkReading[];
  readonly at: number;
}

/** The daemon's own process (all threads), read on every host collection. */
export interface ProcessReading {
  readonly residentMemoryBytes: number;
  readonly heapUsedBytes: number;
  readonly cpuSecondsTotal: number;
  readonly at: number;
}

/** The proxy loops' event-loop delay (the worst loop) and heap (all loops), as sent by the proxy. */
export interface ProxyLoopReading {
  readonly delayP50Seconds: number;
  readonly delayP99Seconds: number;
  readonly delayMaxSeconds: number;
  readonly heapUsedBytes: number;
  readonly at: number;
}

/** One running collector's health, as the runner reports it (infermeter_collector_*). */
export interface CollectorHealth {
  readonly collector: string;
  /** The engine collector runs one per upstream; null for the others. */
  readonly upstream: string | null;
  readonly up: boolean;
  /** Unix ms of its last success, null if never. */
  readonly lastSuccessAt: number | null;
  readonly durationSeconds: number | null;
  /** Unix ms of its last run's end (or of its start, before the first run ended). */
  readonly at: number;
}

/** What a reader gets: every part as last read, the join already applied to GPUs and engines. */
export interface MachineState {
  /** In the order they were first read. */
  readonly gpus: readonly GpuReading[];
  /** In the order their first scrape succeeded. */
  readonly engines: readonly EngineReading[];
  /** null: the join collector does not run (one upstream, no gpus: setting) or has not answered. */
  readonly gpuEngines: GpuEngineJoin | null;
  readonly host: HostReading | null;
  readonly process: ProcessReading | null;
  readonly proxyLoop: ProxyLoopReading | null;
  /** In the order they were started. */
  readonly collectors: readonly CollectorHealth[];
}

/** What a reader of machine state is handed. */
export interface MachineReader {
  read(): MachineState;
}

export class MachineSnapshot implements MachineReader {
  private readonly gpus = new Map<number, Omit<GpuReading, 'upstreams'>>();
  private readonly engines = new Map<string, Omit<EngineReading, 'gpus'>>();
  private join: GpuEngineJoin | null = null;
  private host: HostReading | null = null;
  private process: ProcessReading | null = null;
  private proxyLoop: ProxyLoopReading | null = null;
  private readonly health = new Map<string, CollectorHealth>();

  setGpu(g: Omit<GpuReading, 'upstreams'>): void {
    this.gpus.set(g.index, g);
  }

  removeGpu(index: number): void {
    this.gpus.delete(index);
  }

  setEngine(e: Omit<EngineReading, 'gpus'>): void {
    this.engines.set(e.upstream, e);
  }

  removeEngine(upstream: string): void {
    this.engines.delete(upstream);
  }

  /** null: the join is not known (its query failed, or the collector closed). */
  setGpuEngines(join: GpuEngineJoin | null): void {
    this.join = join;
  }

  setHost(h: HostReading): void {
    this.host = h;
  }

  setProcess(p: ProcessReading): void {
    this.process = p;
  }

  setProxyLoop(p: ProxyLoopReading): void {
    this.proxyLoop = p;
  }

  setHealth(h: CollectorHealth): void {
    this.health.set(`${h.collector}\0${h.upstream ?? ''}`, h);
  }

  read(): MachineState {
    const upstreamsOf = new Map<number, string[]>();
    const gpusOf = new Map<string, number[]>();
    for (const r of this.join?.rows ?? []) {
      upstreamsOf.set(r.gpu, [...(upstreamsOf.get(r.gpu) ?? []), r.upstream]);
      gpusOf.set(r.upstream, [...(gpusOf.get(r.upstream) ?? []), r.gpu]);
    }
    return {
      gpus: [...this.gpus.values()].map((g) => ({ ...g, upstreams: upstreamsOf.get(g.index) ?? [] })),
      engines: [...this.engines.values()].map((e) => ({ ...e, gpus: gpusOf.get(e.upstream) ?? [] })),
      gpuEngines: this.join,
      host: this.host,
      process: this.process,
      proxyLoop: this.proxyLoop,
      collectors: [...this.health.values()],
    };
  }
}

/** A number as the snapshot keeps it: null for no value, NaN or ±Inf (readers never see them). */
export function finite(v: number | null | undefined): number | null {
  return v !== null && v !== undefined && Number.isFinite(v) ? v : null;
}
