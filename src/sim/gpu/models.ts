/**
 * GPU models the fake nvidia-smi can pretend to be, and how one simulated GPU's readings
 * follow the load. Figures are public spec-sheet values (memory as nvidia-smi reports it,
 * board power limit, max clocks); an unknown name gets the first row's figures.
 */

export interface GpuModel {
  name: string;
  memoryMiB: number;
  powerLimitW: number;
  memClockMHz: number;
  maxSmClockMHz: number;
  /** HBM boards report memory temperature (dmon mtemp); GDDR boards print "-". */
  hbm: boolean;
  /** ECC counters are printed only where ECC is on. */
  ecc: boolean;
}

export const GPU_MODELS: readonly GpuModel[] = [
  { name: 'NVIDIA H100 80GB HBM3', memoryMiB: 81559, powerLimitW: 700, memClockMHz: 2619, maxSmClockMHz: 1980, hbm: true, ecc: true },
  { name: 'NVIDIA H200', memoryMiB: 143771, powerLimitW: 700, memClockMHz: 3201, maxSmClockMHz: 1980, hbm: true, ecc: true },
  { name: 'NVIDIA A100-SXM4-80GB', memoryMiB: 81920, powerLimitW: 400, memClockMHz: 1593, maxSmClockMHz: 1410, hbm: true, ecc: true },
  { name: 'NVIDIA L4', memoryMiB: 23034, powerLimitW: 72, memClockMHz: 6251, maxSmClockMHz: 2040, hbm: false, ecc: true },
  { name: 'NVIDIA GeForce RTX 4090', memoryMiB: 24564, powerLimitW: 450, memClockMHz: 10501, maxSmClockMHz: 2520, hbm: false, ecc: false },
];

export function findModel(name: string | undefined): GpuModel {
  const base = GPU_MODELS[0]!;
  if (!name) return base;
  return GPU_MODELS.find((m) => m.name.toLowerCase() === name.toLowerCase()) ?? { ...base, name };
}

/** What drives the readings: 0 (idle) to 1 (saturated), plus the KV cache fill. */
export interface Load {
  busy: number;
  kvCache: number;
}

export interface Reading {
  powerW: number;
  tempC: number;
  memTempC: number | null;
  smPct: number;
  memPct: number;
  memClockMHz: number;
  smClockMHz: number;
  powerViolationPct: number;
  fbMiB: number;
  bar1MiB: number;
  rxMBps: number;
  txMBps: number;
}

const IDLE_SM_CLOCK = 345;
const IDLE_POWER_SHARE = 0.1;
/** Share of memory an inference engine's weights and runtime hold before any KV cache. */
const WEIGHTS_SHARE = 0.45;
const KV_SHARE = 0.45;

/** One simulated GPU; temperature lags the load like a real heatsink. */
export class SimGpu {
  private temp = 32;

  constructor(
    readonly index: number,
    readonly model: GpuModel,
    private readonly noise: () => number,
  ) {}

  read(load: Load): Reading {
    const busy = clamp(load.busy, 0, 1);
    const jitter = (span: number) => (this.noise() - 0.5) * span;
    const targetTemp = 30 + 45 * busy;
    this.temp += (targetTemp - this.temp) * 0.15;
    const m = this.model;
    const sm = busy === 0 ? 0 : clamp(100 * busy + jitter(6), 1, 100);
    return {
      powerW: m.powerLimitW * (IDLE_POWER_SHARE + (1 - IDLE_POWER_SHARE) * busy) + jitter(m.powerLimitW * 0.02),
      tempC: this.temp + jitter(1),
      memTempC: m.hbm ? this.temp + 4 + jitter(1) : null,
      smPct: sm,
      memPct: clamp(sm * 0.55 + jitter(4), 0, 100),
      memClockMHz: m.memClockMHz,
      smClockMHz: busy === 0 ? IDLE_SM_CLOCK : m.maxSmClockMHz,
      powerViolationPct: busy > 0.95 ? clamp((busy - 0.95) * 1000, 0, 100) : 0,
      fbMiB: m.memoryMiB * (WEIGHTS_SHARE + KV_SHARE * clamp(load.kvCache, 0, 1)),
      bar1MiB: 5,
      rxMBps: busy * 40 + clamp(jitter(4), 0, 4),
      txMBps: busy * 25 + clamp(jitter(4), 0, 4),
    };
  }
}

function clamp(v: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, v));
}

/** A small seeded PRNG so fake output is reproducible. */
export { mulberry32 as seeded } from '../../lib/prng.js';
