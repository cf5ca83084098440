/**
 * Energy and cost per output token of one bench step (docs/bench.md, "Energy and cost").
 *
 * The GPUs' energy is the daemon's: each power reading of `nvidia-smi dmon` goes through the
 * GPU collector's energy counter (collectors/gpu/energy.ts: the trapezoid between readings,
 * gaps bridged), which the monitor keeps beside each sample as `energyJoules`. A step's energy
 * is that counter's increase from its start to its end; a boundary that falls between two
 * readings takes the counter where a straight line between them puts it (constant power over
 * the interval, as the trapezoid assumes), and one past the last reading holds its power. Prices
 * are the daemon's too (metrics/energy/settings.ts: costOf). Pure.
 */
import { costOf, type Prices } from '../metrics/energy/settings.js';
import type { Thresholds } from '../slo/config.js';
import { meetsEverySlo, type GpuSample, type RequestSample, type StepEnergy } from './report.js';

/** --gpu-hour-cost, --energy-price and --currency; 0 for a price not set. */
export interface BenchPrices extends Prices {
  currency: string;
}

/** The counter of one GPU at `t` (seconds since the bench started), from its samples in time order. */
function counterAt(samples: readonly GpuSample[], t: number): number {
  const first = samples[0]!;
  const last = samples[samples.length - 1]!;
  if (t <= first.t) return first.energyJoules! - (first.powerWatts ?? 0) * (first.t - t);
  if (t >= last.t) return last.energyJoules! + (last.powerWatts ?? 0) * (t - last.t);
  let i = 1;
  while (samples[i]!.t < t) i++;
  const a = samples[i - 1]!;
  const b = samples[i]!;
  return b.t > a.t ? a.energyJoules! + ((b.energyJoules! - a.energyJoules!) * (t - a.t)) / (b.t - a.t) : b.energyJoules!;
}

/** Every GPU's energy over [from, to] (seconds since the bench started); null when no GPU reported power. */
export function gpuJoulesBetween(samples: readonly GpuSample[], from: number, to: number): { joules: number; gpus: number } | null {
  const byGpu = new Map<number, GpuSample[]>();
  for (const s of samples) {
    if (s.energyJoules === null || s.energyJoules === undefined) continue;
    const list = byGpu.get(s.gpu);
    if (list) list.push(s);
    else byGpu.set(s.gpu, [s]);
  }
  if (byGpu.size === 0) return null;
  let joules = 0;
  for (const list of byGpu.values()) joules += Math.max(0, counterAt(list, to) - counterAt(list, from));
  return { joules, gpus: byGpu.size };
}

export function stepEnergy(
  window: { from: number; to: number },
  gpu: readonly GpuSample[],
  requests: readonly RequestSample[],
  slo: Thresholds,
  prices: BenchPrices,
): StepEnergy | null {
  const measured = gpuJoulesBetween(gpu, window.from, window.to);
  if (!measured) return null;
  const { joules, gpus } = measured;
  const gpuSeconds = gpus * Math.max(0, window.to - window.from);
  const outputTokens = requests.reduce((a, s) => a + s.outputTokens, 0);
  const judged = Object.values(slo).some((v) => v !== undefined);
  const goodOutputTokens = judged ? requests.filter((s) => meetsEverySlo(s, slo)).reduce((a, s) => a + s.outputTokens, 0) : null;
  const per = (tokens: number | null) => (tokens ? joules / tokens : null);
  const priced = prices.gpuHourCost > 0 || prices.energyPrice > 0;
  const cost = Object.values(costOf(prices, joules, gpuSeconds)).reduce((a, v) => a + v, 0);
  return {
    joules, gpus, gpuSeconds, outputTokens, goodOutputTokens,
    joulesPerOutputToken: per(outputTokens),
    joulesPerGoodOutputToken: per(goodOutputTokens),
    costPerMillionOutputTokens: priced && outputTokens > 0 ? (cost / outputTokens) * 1e6 : null,
    currency: priced ? prices.currency : null,
  };
}
