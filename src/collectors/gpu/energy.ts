/**
 * Energy per GPU as a counter that only goes up: `infermeter_gpu_energy_joules_total{gpu}`,
 * joules since infermeter started counting (docs/energy.md, "Sources").
 *
 * Two sources, the better one per GPU:
 * - the driver's own counter where the source has one: NVML's total energy, which
 *   dcgm-exporter exports as DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION (mJ since the driver was
 *   loaded). Its increases are used as they are; a gap between readings loses nothing, since
 *   the next reading's increase covers it. A value below the last one is a driver reload: the
 *   counter started again from 0, so the new value is all energy since.
 * - otherwise the power reading, integrated: nvidia-smi dmon's pwr (and dcgm-exporter's
 *   DCGM_FI_DEV_POWER_USAGE) are NVML's power usage, which NVML documents as the average over
 *   the last second on Ampere and newer (GA100 aside) and the instantaneous draw before. Each
 *   interval between two readings adds the mean of its two ends times its length (the
 *   trapezoid: exact for constant power, and for a straight ramp). A gap (dmon restarting, the
 *   collector down) is bridged the same way, so it neither loses the gap nor counts it twice; a
 *   reading that repeats the last timestamp, or goes back in time, adds nothing.
 *
 * Once a GPU has shown the driver's counter it stays on it (a reading without it adds
 * nothing: the next counter increase covers the interval), so the two sources never count the
 * same interval. Pure arithmetic on hand-made samples (test/unit/collectors/gpu-energy.test.ts).
 */

export type EnergySource = 'driver_counter' | 'power';

export interface EnergyReading {
  /** Power draw in watts; null: none read. */
  powerWatts: number | null;
  /** The driver's cumulative energy counter, in joules; null: the source has none. */
  counterJoules: number | null;
}

interface GpuState {
  total: number;
  /** Unix ms of the GPU's first reading: the total counts from there. */
  since: number;
  source: EnergySource;
  /** The last power reading and its time (Unix ms), for the next interval. */
  power: { watts: number; at: number } | null;
  /** The driver counter's last value, for the next increase. */
  counter: number | null;
}

export class GpuEnergy {
  private readonly gpus = new Map<number, GpuState>();

  /**
   * One reading of one GPU at `at` (Unix ms). Returns the GPU's total joules so far (0 on its
   * first reading), or null while it has shown neither power nor a counter.
   */
  observe(gpu: number, r: EnergyReading, at: number): number | null {
    const counter = finiteOrNull(r.counterJoules);
    const watts = finiteOrNull(r.powerWatts);
    let s = this.gpus.get(gpu);
    if (!s) {
      if (counter === null && watts === null) return null;
      s = { total: 0, since: at, source: counter !== null ? 'driver_counter' : 'power', power: null, counter: null };
      this.gpus.set(gpu, s);
    }
    if (counter !== null) {
      if (s.source === 'power') s.source = 'driver_counter'; // from now on the counter alone
      if (s.counter !== null) s.total += counter >= s.counter ? counter - s.counter : counter;
      s.counter = counter;
      return s.total;
    }
    if (s.source === 'driver_counter' || watts === null) return s.total;
    const last = s.power;
    if (last && at > last.at) s.total += ((last.watts + watts) / 2) * ((at - last.at) / 1000);
    if (!last || at !== last.at) s.power = { watts, at };
    return s.total;
  }

  total(gpu: number): number | null {
    return this.gpus.get(gpu)?.total ?? null;
  }

  source(gpu: number): EnergySource | null {
    return this.gpus.get(gpu)?.source ?? null;
  }

  /** Unix ms the GPU's total counts from (its first reading); null: not counting yet. */
  since(gpu: number): number | null {
    return this.gpus.get(gpu)?.since ?? null;
  }
}

function finiteOrNull(v: number | null | undefined): number | null {
  return v !== null && v !== undefined && Number.isFinite(v) && v >= 0 ? v : null;
}
