/**
 * What energy attribution and cost read of the configuration (config/flags.ts fills it;
 * docs/energy.md, "Cost"): the prices, the currency they are in, and how fast the engine
 * prefills, which decides the prompts' share when an upstream's energy is split between its
 * models. An
 * upstream of the `upstreams:` list may carry prices of its own (lib/upstream-spec.ts).
 */
import type { UpstreamSpec } from '../../lib/upstream-spec.js';

export interface EnergySettings {
  /** Currency per GPU-hour (rented or amortised GPUs), charged for every second of every GPU an upstream runs on; 0: none. */
  gpuHourCost: number;
  /** Currency per kWh of GPU energy; 0: none. */
  energyPrice: number;
  /** What the prices are in: the `currency` label of infermeter_cost_total. */
  currency: string;
  /**
   * Prompt tokens per second the engine prefills on its GPUs: a second's energy goes to the
   * prompts prefilled in it by the share of the second their prefill took, the rest to the
   * output tokens (0: output tokens alone).
   */
  energyPrefillRate: number;
  /** --prompt-chars-per-token: a wasted request's prompt tokens from its body's size where no usage came (metrics/waste/). */
  promptCharsPerToken: number;
}

/** What a price of one upstream is, its own or the global one. */
export interface Prices {
  gpuHourCost: number;
  energyPrice: number;
}

/** Each upstream's prices by name: its `upstreams:` entry's where given, else the global flags'. */
export function pricesByUpstream(settings: EnergySettings, upstreams: readonly UpstreamSpec[]): Map<string, Prices> {
  return new Map(upstreams.map((u) => [u.name, { gpuHourCost: u.gpuHourCost ?? settings.gpuHourCost, energyPrice: u.energyPrice ?? settings.energyPrice }]));
}

export const JOULES_PER_KWH = 3.6e6;

/** The cost of some energy and GPU time at these prices, by kind (a kind without a price is left out). */
export function costOf(p: Prices, joules: number, gpuSeconds: number): { energy?: number; gpu_time?: number } {
  const out: { energy?: number; gpu_time?: number } = {};
  if (p.energyPrice > 0) out.energy = (joules / JOULES_PER_KWH) * p.energyPrice;
  if (p.gpuHourCost > 0) out.gpu_time = (gpuSeconds / 3600) * p.gpuHourCost;
  return out;
}

/** Some price is set somewhere: cost is counted, and a currency is needed. */
export function anyPrice(settings: EnergySettings, upstreams: readonly UpstreamSpec[]): boolean {
  return [...pricesByUpstream(settings, upstreams).values(), settings].some((p) => p.gpuHourCost > 0 || p.energyPrice > 0);
}
