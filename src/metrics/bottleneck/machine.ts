/**
 * The machine's side of the signals: engine, GPU and proxy-loop readings taken from the
 * machine snapshot the collectors publish (collectors/snapshot.ts), one reading per
 * evaluation, kept for the signal window so that means and counter increases cover it.
 * Engines are kept per upstream and GPUs with their join rows, so that each model's signals
 * read the engines and GPUs that serve it (scopeOf).
 */
import type { EngineReading, GpuReading, HistogramReading, MachineState } from '../../collectors/snapshot.js';
import { mean, type SignalName } from './signals.js';

/** The GPU figures the signals read. */
export type GpuSample = Pick<GpuReading, 'utilization' | 'powerViolation' | 'thermalViolation' | 'smClockHz' | 'dramActive'>;

type PhaseTotals = { sum: number; count: number } | null;

export interface MachineSample {
  at: number;
  /** By upstream name. */
  engines: Map<string, EngineReading>;
  /** By GPU index (as the `gpu` label spells it); a GPU with none of the figures is left out. */
  gpus: Map<string, GpuSample>;
  /** infermeter_gpu_engine_info: gpu → the upstreams its rows name (empty map: no join rows). */
  gpuUpstreams: Map<string, string[]>;
  proxyLoopDelayP99: number | null;
}

/** What one model's signals are read from: the engines of these upstreams, and these GPUs (null: all). */
export interface MachineScope {
  upstreams: readonly string[];
  gpus: ReadonlySet<string> | null;
}

/** The machine reading as one model sees it: the machine-wide shape, over the scope's engines and GPUs. */
interface ScopedSample {
  at: number;
  waiting: number | null;
  running: number | null;
  kvCacheUsage: number | null;
  preemptionsTotal: number | null;
  queue: PhaseTotals;
  prefill: PhaseTotals;
  gpus: Map<string, GpuSample>;
  proxyLoopDelayP99: number | null;
}

/** A phase histogram's _sum and _count (no _sum: no phase). */
function phase(h: HistogramReading | null): PhaseTotals {
  return h && h.sum !== null ? { sum: h.sum, count: h.count ?? 0 } : null;
}

export function readMachine(m: MachineState, at: number): MachineSample {
  const gpus = new Map<string, GpuSample>();
  for (const g of m.gpus) {
    const s: GpuSample = { utilization: g.utilization, powerViolation: g.powerViolation, thermalViolation: g.thermalViolation, smClockHz: g.smClockHz, dramActive: g.dramActive };
    if (Object.values(s).some((v) => v !== null)) gpus.set(String(g.index), s);
  }
  const gpuUpstreams = new Map<string, string[]>();
  for (const row of m.gpuEngines?.rows ?? []) {
    const gpu = String(row.gpu);
    gpuUpstreams.set(gpu, [...(gpuUpstreams.get(gpu) ?? []), row.upstream]);
  }
  return { at, engines: new Map(m.engines.map((e) => [e.upstream, e])), gpus, gpuUpstreams, proxyLoopDelayP99: m.proxyLoop?.delayP99Seconds ?? null };
}

/**
 * The scope of a model served by `upstreams` (issue 26): their engine series, and the GPUs
 * whose join rows name one of them. No upstreams known (one upstream, an allowlist, a model
 * no list names): null, the whole machine. No join rows at all: every GPU, as with one engine.
 */
export function scopeOf(s: MachineSample | undefined, upstreams: readonly string[] | undefined): MachineScope | null {
  if (!s || !upstreams || upstreams.length === 0) return null;
  if (s.gpuUpstreams.size === 0) return { upstreams, gpus: null };
  const gpus = new Set<string>();
  for (const [gpu, us] of s.gpuUpstreams) if (us.some((u) => upstreams.includes(u))) gpus.add(gpu);
  return { upstreams, gpus };
}

/** A machine reading narrowed to a scope; null scope: every engine and GPU, summed. */
function scoped(s: MachineSample, scope: MachineScope | null): ScopedSample {
  const engines = [...s.engines].filter(([u]) => !scope || scope.upstreams.includes(u)).map(([, e]) => e);
  const values = (f: (e: EngineReading) => number | null) => engines.map(f).filter((v): v is number => v !== null);
  const add = (f: (e: EngineReading) => number | null) => {
    const xs = values(f);
    return xs.length ? xs.reduce((a, b) => a + b, 0) : null;
  };
  const phases = (f: (e: EngineReading) => PhaseTotals): PhaseTotals => {
    const xs = engines.map(f).filter((v): v is NonNullable<PhaseTotals> => v !== null);
    return xs.length ? { sum: xs.reduce((a, x) => a + x.sum, 0), count: xs.reduce((a, x) => a + x.count, 0) } : null;
  };
  const kv = values((e) => e.kvCacheUsage);
  const gpus = scope?.gpus ? new Map([...s.gpus].filter(([id]) => scope.gpus!.has(id))) : s.gpus;
  return {
    at: s.at, waiting: add((e) => e.waiting), running: add((e) => e.running), kvCacheUsage: kv.length ? kv.reduce((a, b) => a + b, 0) / kv.length : null,
    preemptionsTotal: add((e) => e.preemptionsTotal), queue: phases((e) => phase(e.histograms.queueTime)), prefill: phases((e) => phase(e.histograms.prefillTime)), gpus, proxyLoopDelayP99: s.proxyLoopDelayP99,
  };
}

const ENGINE_SIGNALS: readonly SignalName[] = ['engineWaiting', 'engineRunning', 'kvCacheUsage', 'kvCacheUsageMax', 'preemptionsPerSecond', 'queueTimeMean', 'queueShare', 'prefillShare'];
const GPU_SIGNALS: readonly SignalName[] = ['gpuUtilization', 'gpuPowerViolation', 'gpuThermalViolation', 'gpuSmClockRatio', 'gpuDramActive'];

/** The evidence's word on what a scoped reading read: which upstream's engine series, which GPUs. */
function scopeBasis(scope: MachineScope, basis: Partial<Record<SignalName, string>>): void {
  const names = scope.upstreams.join(', ');
  const engine = `engine series of upstream ${names}`;
  const gpu = scope.gpus === null ? 'every GPU (no infermeter_gpu_engine_info rows)'
    : scope.gpus.size === 0 ? `no GPU is tied to upstream ${names} (infermeter_gpu_engine_info)`
      : `GPU ${[...scope.gpus].sort((a, b) => Number(a) - Number(b) || a.localeCompare(b)).join(', ')} of upstream ${names} (infermeter_gpu_engine_info)`;
  for (const sig of ENGINE_SIGNALS) basis[sig] = basis[sig] ? `${engine}; ${basis[sig]}` : engine;
  for (const sig of GPU_SIGNALS) basis[sig] = gpu;
}

/** GPU utilization at which a GPU's SM clock counts toward its peak. */
const BUSY = 0.5;

/** The readings of the last window, and each GPU's highest busy SM clock since start. */
export class MachineHistory {
  private samples: MachineSample[] = [];
  private readonly peakClock = new Map<string, number>();

  add(s: MachineSample, from: number): void {
    this.samples.push(s);
    while (this.samples.length > 1 && this.samples[0]!.at < from) this.samples.shift();
    for (const [id, g] of s.gpus) {
      if (g.smClockHz !== null && (g.utilization ?? 0) >= BUSY) this.peakClock.set(id, Math.max(this.peakClock.get(id) ?? 0, g.smClockHz));
    }
  }

  /**
   * The machine signals over the window; ttftMean (proxy, the model's) turns engine phase times
   * into shares. `upstreams`: the upstreams that serve the model (issue 26), read through
   * scopeOf; absent or empty, the whole machine.
   */
  signals(ttftMean: number | null, upstreams?: readonly string[]): { values: Partial<Record<SignalName, number | null>>; basis: Partial<Record<SignalName, string>>; scope: MachineScope | null } {
    const scope = scopeOf(this.samples[this.samples.length - 1], upstreams);
    const list = this.samples.map((s) => scoped(s, scope));
    const m = (f: (s: ScopedSample) => number | null) => mean(list.map(f).filter((v): v is number => v !== null));
    const max = (f: (s: ScopedSample) => number | null) => {
      const xs = list.map(f).filter((v): v is number => v !== null);
      return xs.length ? Math.max(...xs) : null;
    };
    const last = list[list.length - 1];
    // From the oldest reading that has the value: a family that appeared mid-window (the engine's
    // first good scrape) counts from there, not from zero.
    const increase = (f: (s: ScopedSample) => number | null): number | null => {
      const from = list.find((s) => f(s) !== null);
      if (!from || !last || from === last) return null;
      const a = f(from)!;
      const b = f(last);
      if (b === null) return null;
      return b >= a ? b - a : b; // a counter that went down restarted from zero
    };
    const rateSeconds = (f: (s: ScopedSample) => number | null): number => {
      const from = list.find((s) => f(s) !== null);
      return from && last ? (last.at - from.at) / 1000 : 0;
    };
    const phaseMean = (f: (s: ScopedSample) => { sum: number; count: number } | null): number | null => {
      const n = increase((s) => f(s)?.count ?? null);
      const sum = increase((s) => f(s)?.sum ?? null);
      return n !== null && sum !== null && n > 0 ? sum / n : null;
    };
    const preempt = increase((s) => s.preemptionsTotal);
    const queueMean = phaseMean((s) => s.queue);
    const prefillMean = phaseMean((s) => s.prefill);
    const basis: Partial<Record<SignalName, string>> = {};
    let prefillShare: number | null = null;
    const share = (x: number | null) => (x === null || ttftMean === null || !(ttftMean > 0) ? null : Math.min(1, x / ttftMean));
    const queueShare = share(queueMean);
    if (prefillMean !== null) prefillShare = share(prefillMean);
    else if (queueShare !== null) {
      prefillShare = 1 - queueShare;
      basis.prefillShare = 'no engine prefill histogram: 1 - queueShare';
    }
    const gpuIds = new Set<string>();
    for (const s of list) for (const id of s.gpus.keys()) gpuIds.add(id);
    const perGpu = (f: (g: GpuSample) => number | null) => [...gpuIds].map((id) => m((s) => { const g = s.gpus.get(id); return g ? f(g) : null; })).filter((v): v is number => v !== null);
    const worst = (xs: number[]) => (xs.length ? Math.max(...xs) : null);
    const clockRatios = [...gpuIds].map((id) => {
      const peak = this.peakClock.get(id);
      const avg = m((s) => s.gpus.get(id)?.smClockHz ?? null);
      return peak && avg !== null ? avg / peak : null;
    }).filter((v): v is number => v !== null);
    if (scope) scopeBasis(scope, basis);
    return {
      basis, scope,
      values: {
        engineWaiting: m((s) => s.waiting),
        engineRunning: m((s) => s.running),
        kvCacheUsage: m((s) => s.kvCacheUsage),
        kvCacheUsageMax: max((s) => s.kvCacheUsage),
        preemptionsPerSecond: preempt === null ? null : preempt / rateSeconds((s) => s.preemptionsTotal),
        queueTimeMean: queueMean,
        queueShare,
        prefillShare,
        gpuUtilization: mean(perGpu((g) => g.utilization)),
        gpuPowerViolation: worst(perGpu((g) => g.powerViolation)),
        gpuThermalViolation: worst(perGpu((g) => g.thermalViolation)),
        gpuSmClockRatio: clockRatios.length ? Math.min(...clockRatios) : null,
        gpuDramActive: mean(perGpu((g) => g.dramActive)),
        proxyLoopDelayP99: m((s) => s.proxyLoopDelayP99),
      },
    };
  }
}
