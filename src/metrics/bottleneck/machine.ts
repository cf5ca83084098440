/**
 * The machine's side of the signals: engine, GPU and proxy-loop gauges read back from the
 * registry the collectors publish into (values, never rendered text), one reading per
 * evaluation, kept for the signal window so that means and counter increases cover it.
 * Engine series are kept per `upstream` and GPUs with their join rows, so that each model's
 * signals read the engines and GPUs that serve it (issue 26; scopeOf).
 */
import type { Registry } from 'prom-client';
import { M } from '../../slo/names.js';
import { GPU_ENGINE_INFO_METRIC } from '../../collectors/gpu/columns.js';
import { mean, type SignalName } from './signals.js';

interface Value {
  labels: Record<string, string | number>;
  value: number;
  metricName?: string;
}

async function values(registry: Registry, name: string): Promise<Value[]> {
  const metric = registry.getSingleMetric(name);
  if (!metric) return [];
  const got = (await metric.get()) as { values: Value[] };
  return got.values.filter((v) => Number.isFinite(v.value));
}

async function byGpu(registry: Registry, name: string): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const v of await values(registry, name)) out.set(String(v.labels['gpu'] ?? ''), v.value);
  return out;
}

/** Series grouped by their `upstream` label ('' without one). */
function byUpstream(vs: readonly Value[]): Map<string, Value[]> {
  const out = new Map<string, Value[]>();
  for (const v of vs) {
    const u = String(v.labels['upstream'] ?? '');
    const list = out.get(u);
    if (list) list.push(v);
    else out.set(u, [v]);
  }
  return out;
}

export interface GpuSample {
  utilization: number | null;
  powerViolation: number | null;
  thermalViolation: number | null;
  smClockHz: number | null;
  dramActive: number | null;
}

type PhaseTotals = { sum: number; count: number } | null;

/** One upstream's engine series (issue 26: every engine series carries `upstream`). */
export interface EngineReading {
  waiting: number | null;
  running: number | null;
  /** KV usage is a mean over series: its sum and count, so upstreams combine exactly. */
  kvSum: number;
  kvCount: number;
  preemptionsTotal: number | null;
  queue: PhaseTotals;
  prefill: PhaseTotals;
}

export interface MachineSample {
  at: number;
  engines: Map<string, EngineReading>;
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

/** The machine reading as one model sees it: the old machine-wide shape, over the scope's series. */
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

function engineReadings(waiting: Value[], running: Value[], kv: Value[], preempt: Value[], queue: Value[], prefill: Value[], queueName: string, prefillName: string): Map<string, EngineReading> {
  const groups = [waiting, running, kv, preempt, queue, prefill].map(byUpstream);
  const ids = new Set(groups.flatMap((g) => [...g.keys()]));
  const sum = (vs: Value[] | undefined) => (vs && vs.length ? vs.reduce((a, v) => a + v.value, 0) : null);
  const out = new Map<string, EngineReading>();
  for (const id of ids) {
    const [w, r, k, p, q, f] = groups.map((g) => g.get(id));
    out.set(id, { waiting: sum(w), running: sum(r), kvSum: sum(k) ?? 0, kvCount: k?.length ?? 0, preemptionsTotal: sum(p), queue: phase(q ?? [], queueName), prefill: phase(f ?? [], prefillName) });
  }
  return out;
}

/** _sum and _count of a histogram family's series (every series added). */
function phase(vs: readonly Value[], name: string): PhaseTotals {
  let sum = 0;
  let count = 0;
  let seen = false;
  for (const v of vs) {
    if (v.metricName === `${name}_sum`) (sum += v.value), (seen = true);
    else if (v.metricName === `${name}_count`) count += v.value;
  }
  return seen ? { sum, count } : null;
}

export async function readMachine(registry: Registry, at: number): Promise<MachineSample> {
  const [waiting, running, kv, preempt, queue, prefill, util, pviol, tviol, clock, dram, join, loop] = await Promise.all([
    values(registry, M.waiting), values(registry, M.running), values(registry, M.kvCache), values(registry, M.preemptions),
    values(registry, M.engineQueue), values(registry, M.enginePrefill),
    byGpu(registry, M.gpuUtil), byGpu(registry, M.gpuPowerViolation), byGpu(registry, M.gpuThermalViolation), byGpu(registry, M.gpuSmClock), byGpu(registry, M.gpuDram),
    values(registry, GPU_ENGINE_INFO_METRIC), values(registry, 'infermeter_proxy_event_loop_delay_seconds'),
  ]);
  const gpus = new Map<string, GpuSample>();
  for (const id of new Set([...util.keys(), ...pviol.keys(), ...tviol.keys(), ...clock.keys(), ...dram.keys()])) {
    gpus.set(id, { utilization: util.get(id) ?? null, powerViolation: pviol.get(id) ?? null, thermalViolation: tviol.get(id) ?? null, smClockHz: clock.get(id) ?? null, dramActive: dram.get(id) ?? null });
  }
  const gpuUpstreams = new Map<string, string[]>();
  for (const row of join) {
    if (row.value !== 1) continue;
    const gpu = String(row.labels['gpu'] ?? '');
    gpuUpstreams.set(gpu, [...(gpuUpstreams.get(gpu) ?? []), String(row.labels['upstream'] ?? '')]);
  }
  const p99 = loop.filter((v) => v.labels['stat'] === 'p99');
  return {
    at, engines: engineReadings(waiting, running, kv, preempt, queue, prefill, M.engineQueue, M.enginePrefill), gpus, gpuUpstreams,
    proxyLoopDelayP99: p99.length ? Math.max(...p99.map((v) => v.value)) : null,
  };
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

/** A machine reading narrowed to a scope; null scope: every series, summed as before issue 26's split. */
function scoped(s: MachineSample, scope: MachineScope | null): ScopedSample {
  const engines = [...s.engines].filter(([u]) => !scope || scope.upstreams.includes(u)).map(([, e]) => e);
  const add = (f: (e: EngineReading) => number | null) => {
    const xs = engines.map(f).filter((v): v is number => v !== null);
    return xs.length ? xs.reduce((a, b) => a + b, 0) : null;
  };
  const phases = (f: (e: EngineReading) => PhaseTotals): PhaseTotals => {
    const xs = engines.map(f).filter((v): v is NonNullable<PhaseTotals> => v !== null);
    return xs.length ? { sum: xs.reduce((a, x) => a + x.sum, 0), count: xs.reduce((a, x) => a + x.count, 0) } : null;
  };
  const kvCount = engines.reduce((a, e) => a + e.kvCount, 0);
  const gpus = scope?.gpus ? new Map([...s.gpus].filter(([id]) => scope.gpus!.has(id))) : s.gpus;
  return {
    at: s.at, waiting: add((e) => e.waiting), running: add((e) => e.running), kvCacheUsage: kvCount ? engines.reduce((a, e) => a + e.kvSum, 0) / kvCount : null,
    preemptionsTotal: add((e) => e.preemptionsTotal), queue: phases((e) => e.queue), prefill: phases((e) => e.prefill), gpus, proxyLoopDelayP99: s.proxyLoopDelayP99,
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
