/**
 * The machine's side of the signals: engine, GPU and proxy-loop gauges read back from the
 * registry the collectors publish into (values, never rendered text), one reading per
 * evaluation, kept for the signal window so that means and counter increases cover it.
 */
import type { Registry } from 'prom-client';
import { M } from '../../slo/names.js';
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

async function total(registry: Registry, name: string, how: 'sum' | 'mean' = 'sum'): Promise<number | null> {
  const vs = await values(registry, name);
  if (vs.length === 0) return null;
  const s = vs.reduce((a, v) => a + v.value, 0);
  return how === 'mean' ? s / vs.length : s;
}

/** _sum and _count of a histogram family (every series added). */
async function histogram(registry: Registry, name: string): Promise<{ sum: number; count: number } | null> {
  const vs = await values(registry, name);
  let sum = 0;
  let count = 0;
  let seen = false;
  for (const v of vs) {
    if (v.metricName === `${name}_sum`) (sum += v.value), (seen = true);
    else if (v.metricName === `${name}_count`) count += v.value;
  }
  return seen ? { sum, count } : null;
}

async function byGpu(registry: Registry, name: string): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const v of await values(registry, name)) out.set(String(v.labels['gpu'] ?? ''), v.value);
  return out;
}

export interface GpuSample {
  utilization: number | null;
  powerViolation: number | null;
  thermalViolation: number | null;
  smClockHz: number | null;
  dramActive: number | null;
}

export interface MachineSample {
  at: number;
  waiting: number | null;
  running: number | null;
  kvCacheUsage: number | null;
  preemptionsTotal: number | null;
  queue: { sum: number; count: number } | null;
  prefill: { sum: number; count: number } | null;
  gpus: Map<string, GpuSample>;
  proxyLoopDelayP99: number | null;
}

export async function readMachine(registry: Registry, at: number): Promise<MachineSample> {
  const [waiting, running, kv, preempt, queue, prefill, util, pviol, tviol, clock, dram, loop] = await Promise.all([
    total(registry, M.waiting), total(registry, M.running), total(registry, M.kvCache, 'mean'), total(registry, M.preemptions),
    histogram(registry, M.engineQueue), histogram(registry, M.enginePrefill),
    byGpu(registry, M.gpuUtil), byGpu(registry, M.gpuPowerViolation), byGpu(registry, M.gpuThermalViolation), byGpu(registry, M.gpuSmClock), byGpu(registry, M.gpuDram),
    values(registry, 'infermeter_proxy_event_loop_delay_seconds'),
  ]);
  const gpus = new Map<string, GpuSample>();
  for (const id of new Set([...util.keys(), ...pviol.keys(), ...tviol.keys(), ...clock.keys(), ...dram.keys()])) {
    gpus.set(id, { utilization: util.get(id) ?? null, powerViolation: pviol.get(id) ?? null, thermalViolation: tviol.get(id) ?? null, smClockHz: clock.get(id) ?? null, dramActive: dram.get(id) ?? null });
  }
  const p99 = loop.filter((v) => v.labels['stat'] === 'p99');
  return {
    at, waiting, running, kvCacheUsage: kv, preemptionsTotal: preempt, queue, prefill, gpus,
    proxyLoopDelayP99: p99.length ? Math.max(...p99.map((v) => v.value)) : null,
  };
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

  /** The machine signals over the window; ttftMean (proxy, the model's) turns engine phase times into shares. */
  signals(ttftMean: number | null): { values: Partial<Record<SignalName, number | null>>; basis: Partial<Record<SignalName, string>> } {
    const list = this.samples;
    const m = (f: (s: MachineSample) => number | null) => mean(list.map(f).filter((v): v is number => v !== null));
    const max = (f: (s: MachineSample) => number | null) => {
      const xs = list.map(f).filter((v): v is number => v !== null);
      return xs.length ? Math.max(...xs) : null;
    };
    const last = list[list.length - 1];
    // From the oldest reading that has the value: a family that appeared mid-window (the engine's
    // first good scrape) counts from there, not from zero.
    const increase = (f: (s: MachineSample) => number | null): number | null => {
      const from = list.find((s) => f(s) !== null);
      if (!from || !last || from === last) return null;
      const a = f(from)!;
      const b = f(last);
      if (b === null) return null;
      return b >= a ? b - a : b; // a counter that went down restarted from zero
    };
    const rateSeconds = (f: (s: MachineSample) => number | null): number => {
      const from = list.find((s) => f(s) !== null);
      return from && last ? (last.at - from.at) / 1000 : 0;
    };
    const phaseMean = (f: (s: MachineSample) => { sum: number; count: number } | null): number | null => {
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
    return {
      basis,
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
