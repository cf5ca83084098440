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
  /** GPU Performance Monitoring (dmon --gpm-metrics): Hopper and newer only; other boards print "-". */
  gpm: boolean;
  /** NVLink-connected (SXM) boards; PCIe boards print "-" in the NVLink GPM columns. */
  nvlink: boolean;
}

export const GPU_MODELS: readonly GpuModel[] = [
  { name: 'NVIDIA H100 80GB HBM3', memoryMiB: 81559, powerLimitW: 700, memClockMHz: 2619, maxSmClockMHz: 1980, hbm: true, ecc: true, gpm: true, nvlink: true },
  { name: 'NVIDIA H200', memoryMiB: 143771, powerLimitW: 700, memClockMHz: 3201, maxSmClockMHz: 1980, hbm: true, ecc: true, gpm: true, nvlink: true },
  { name: 'NVIDIA A100-SXM4-80GB', memoryMiB: 81920, powerLimitW: 400, memClockMHz: 1593, maxSmClockMHz: 1410, hbm: true, ecc: true, gpm: false, nvlink: true },
  { name: 'NVIDIA L4', memoryMiB: 23034, powerLimitW: 72, memClockMHz: 6251, maxSmClockMHz: 2040, hbm: false, ecc: true, gpm: false, nvlink: false },
  { name: 'NVIDIA GeForce RTX 4090', memoryMiB: 24564, powerLimitW: 450, memClockMHz: 10501, maxSmClockMHz: 2520, hbm: false, ecc: false, gpm: false, nvlink: false },
];

export function findModel(name: string | undefined): GpuModel {
  const base = GPU_MODELS[0]!;
  if (!name) return base;
  return GPU_MODELS.find((m) => m.name.toLowerCase() === name.toLowerCase()) ?? { ...base, name };
}

/**
 * What drives the readings: 0 (idle) to 1 (saturated), plus the KV cache fill, and the two
 * phases of inference: the decode batch (memory-bound: every step streams the weights and
 * the KV cache from DRAM) and prefill (compute-bound: wide matrix multiplies fill the SMs).
 */
export interface Load {
  busy: number;
  kvCache: number;
  /** Running sequences as a share of a saturating batch, 0-1. */
  decode: number;
  /** Prompt tokens per second as a share of a saturating prefill rate, 0-1. */
  prefill: number;
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
  /** dmon tviol: thermally throttled now. */
  thermalViolation: boolean;
  fbMiB: number;
  bar1MiB: number;
  rxMBps: number;
  txMBps: number;
  /** GPM readings (dmon --gpm-metrics), percentages and MiB/s; the board decides whether they print. */
  gpm: GpmReading;
}

export interface GpmReading {
  graphicsPct: number;
  smActivePct: number;
  smOccupancyPct: number;
  tensorPct: number;
  dramPct: number;
  fp16Pct: number;
  pcieTxMiBps: number;
  pcieRxMiBps: number;
  nvlinkRxMiBps: number;
  nvlinkTxMiBps: number;
}

const IDLE_SM_CLOCK = 345;
const IDLE_POWER_SHARE = 0.1;
/** Share of memory an inference engine's weights and runtime hold before any KV cache. */
const WEIGHTS_SHARE = 0.45;
const KV_SHARE = 0.45;

/** A throttled GPU runs its SMs at this share of their peak clock. */
const THROTTLED_CLOCK_SHARE = { power: 0.62, thermal: 0.7 } as const;

/** One simulated GPU; temperature lags the load like a real heatsink. */
export class SimGpu {
  private temp = 32;

  constructor(
    readonly index: number,
    readonly model: GpuModel,
    private readonly noise: () => number,
    /** A board held back by its power limit or its temperature, whatever the load. */
    private readonly throttle: 'none' | 'power' | 'thermal' = 'none',
  ) {}

  read(load: Load): Reading {
    const busy = clamp(load.busy, 0, 1);
    const jitter = (span: number) => (this.noise() - 0.5) * span;
    const targetTemp = this.throttle === 'thermal' ? 91 : 30 + 45 * busy;
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
      smClockMHz: this.throttle !== 'none' ? Math.round(m.maxSmClockMHz * THROTTLED_CLOCK_SHARE[this.throttle]) : busy === 0 ? IDLE_SM_CLOCK : m.maxSmClockMHz,
      powerViolationPct: this.throttle === 'power' ? clamp(70 + jitter(10), 0, 100) : busy > 0.95 ? clamp((busy - 0.95) * 1000, 0, 100) : 0,
      thermalViolation: this.throttle === 'thermal',
      fbMiB: m.memoryMiB * (WEIGHTS_SHARE + KV_SHARE * clamp(load.kvCache, 0, 1)),
      bar1MiB: 5,
      rxMBps: busy * 40 + clamp(jitter(4), 0, 4),
      txMBps: busy * 25 + clamp(jitter(4), 0, 4),
      gpm: gpmReading(sm, clamp(load.decode, 0, 1), clamp(load.prefill, 0, 1), jitter),
    };
  }
}

/**
 * Decode streams weights and KV cache through DRAM for a few FLOPs per byte, so DRAM
 * bandwidth follows the decode batch; prefill's large matrix multiplies keep many warps
 * resident and the tensor cores busy, so SM occupancy and tensor activity follow prefill.
 */
function gpmReading(smPct: number, decode: number, prefill: number, jitter: (span: number) => number): GpmReading {
  if (smPct === 0) {
    return { graphicsPct: 0, smActivePct: 0, smOccupancyPct: 0, tensorPct: 0, dramPct: 0, fp16Pct: 0, pcieTxMiBps: 0, pcieRxMiBps: 0, nvlinkRxMiBps: 0, nvlinkTxMiBps: 0 };
  }
  const pct = (v: number) => clamp(v + jitter(2), 0, 100);
  const tensor = pct(6 + 20 * decode + 55 * prefill);
  return {
    graphicsPct: pct(smPct * 0.97),
    smActivePct: pct(smPct * (0.55 + 0.4 * prefill)),
    smOccupancyPct: pct(8 + 12 * decode + 62 * prefill),
    tensorPct: tensor,
    dramPct: pct(5 + 80 * decode + 8 * prefill),
    fp16Pct: pct(tensor * 0.3),
    pcieTxMiBps: 20 + 30 * decode,
    pcieRxMiBps: 35 + 60 * prefill,
    nvlinkRxMiBps: 400 + 9000 * decode + 4000 * prefill,
    nvlinkTxMiBps: 400 + 9000 * decode + 4000 * prefill,
  };
}

function clamp(v: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, v));
}

/** A small seeded PRNG so fake output is reproducible. */
export { mulberry32 as seeded } from '../../lib/prng.js';
