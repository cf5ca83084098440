/**
 * The nvidia-smi mapping, as data (like dcgm-exporter's counters CSV): one row per dmon
 * column and the unit nvidia-smi prints under it, giving the metric it feeds and the factor
 * to base units. A column (or column+unit pair) that is not here is skipped with one
 * warning, never guessed. `temp` (older drivers) and `gtemp` feed the same metric.
 */
import type { MetricDef } from '../../lib/metric-def.js';

export const GPU_LABELS = ['gpu', 'uuid'] as const;

/** nvidia-smi's "MB" for memory sizes is MiB: `--query-gpu=memory.*` prints the same numbers as "MiB". */
export const MIB = 1024 * 1024;
/**
 * PCIe throughput: NVML reports KB/s and dmon prints "MB/s" with no statement of the
 * divisor; taken as 10^6 bytes/s (so treat these two gauges as good to about 5%).
 */
export const MB_PER_S = 1e6;

export interface DmonColumn {
  /** Header name as dmon prints it. */
  column: string;
  /** Unit line entry under it. */
  unit: string;
  metric: string;
  /** Multiply the printed number by this to get the base unit. */
  scale: number;
  /** OTLP unit of the metric. */
  otelUnit: string;
  help: string;
}

/** NVML documents the GPM PCIe and NVLink rates in MiB/s. */
export const MIB_PER_S = MIB;

/** GPM columns carry `GPM:` in their units line (`GPM:%` in the published capture). */
export const GPM_UNIT_PREFIX = 'GPM:';

const gpm = (column: string, metric: string, help: string): DmonColumn => ({
  column, unit: 'GPM:%', metric, scale: 0.01, otelUnit: '1', help: `${help}, 0-1 (GPU Performance Monitoring, dmon --gpm-metrics ${column}; Hopper and newer).`,
});
/** The units line under the GPM rate columns is not in any capture: `GPM:MB/s` is a guess; another unit is warned about and skipped. */
const gpmRate = (column: string, metric: string, help: string): DmonColumn => ({
  column, unit: 'GPM:MB/s', metric, scale: MIB_PER_S, otelUnit: 'By/s', help: `${help} (GPM ${column}, MiB/s converted to bytes/s).`,
});

const u = (column: string, what: string, engine: string): DmonColumn => ({
  column, unit: '%', metric: `infermeter_gpu_${what}_utilization_ratio`, scale: 0.01, otelUnit: '1',
  help: `${engine} utilization over the last sample period, 0-1 (dmon ${column}).`,
});

export const DMON_COLUMNS: readonly DmonColumn[] = [
  { column: 'pwr', unit: 'W', metric: 'infermeter_gpu_power_watts', scale: 1, otelUnit: 'W', help: 'Power draw (dmon pwr).' },
  { column: 'gtemp', unit: 'C', metric: 'infermeter_gpu_temperature_celsius', scale: 1, otelUnit: 'Cel', help: 'GPU core temperature (dmon gtemp; temp on older drivers).' },
  { column: 'temp', unit: 'C', metric: 'infermeter_gpu_temperature_celsius', scale: 1, otelUnit: 'Cel', help: 'GPU core temperature (dmon gtemp; temp on older drivers).' },
  { column: 'mtemp', unit: 'C', metric: 'infermeter_gpu_memory_temperature_celsius', scale: 1, otelUnit: 'Cel', help: 'GPU memory (HBM) temperature (dmon mtemp); absent on boards that do not report it.' },
  { ...u('sm', 'sm', 'SM'), help: 'Fraction of the sample period during which one or more kernels ran, 0-1 (dmon sm, the "GPU utilization" of nvidia-smi).' },
  { ...u('mem', 'memory', 'Memory'), help: 'Fraction of the sample period during which device memory was read or written, 0-1 (dmon mem).' },
  u('enc', 'encoder', 'Video encoder (NVENC)'),
  u('dec', 'decoder', 'Video decoder (NVDEC)'),
  u('jpg', 'jpeg', 'JPEG decoder (NVJPG)'),
  u('ofa', 'ofa', 'Optical flow accelerator (OFA)'),
  { column: 'mclk', unit: 'MHz', metric: 'infermeter_gpu_memory_clock_hertz', scale: 1e6, otelUnit: 'Hz', help: 'Memory clock (dmon mclk).' },
  { column: 'pclk', unit: 'MHz', metric: 'infermeter_gpu_sm_clock_hertz', scale: 1e6, otelUnit: 'Hz', help: 'Processor (SM/graphics) clock (dmon pclk).' },
  { column: 'pviol', unit: '%', metric: 'infermeter_gpu_power_violation_ratio', scale: 0.01, otelUnit: '1', help: 'Fraction of the sample period the GPU was throttled by its power limit, 0-1 (dmon pviol).' },
  { column: 'tviol', unit: 'bool', metric: 'infermeter_gpu_thermal_violation', scale: 1, otelUnit: '1', help: '1 while the GPU is throttled for temperature, else 0 (dmon tviol).' },
  { column: 'fb', unit: 'MB', metric: 'infermeter_gpu_memory_used_bytes', scale: MIB, otelUnit: 'By', help: 'Frame buffer memory used (dmon fb, MiB converted to bytes).' },
  { column: 'bar1', unit: 'MB', metric: 'infermeter_gpu_bar1_used_bytes', scale: MIB, otelUnit: 'By', help: 'BAR1 memory used (dmon bar1, MiB converted to bytes).' },
  { column: 'ccpm', unit: 'MB', metric: 'infermeter_gpu_protected_memory_used_bytes', scale: MIB, otelUnit: 'By', help: 'Confidential-computing protected memory used (dmon ccpm, MiB converted to bytes).' },
  { column: 'sbecc', unit: 'errs', metric: 'infermeter_gpu_ecc_single_bit_errors', scale: 1, otelUnit: '{error}', help: 'Single-bit ECC errors, the cumulative count nvidia-smi shows (a gauge: the driver may reset it). Absent when ECC is off.' },
  { column: 'dbecc', unit: 'errs', metric: 'infermeter_gpu_ecc_double_bit_errors', scale: 1, otelUnit: '{error}', help: 'Double-bit ECC errors, the cumulative count nvidia-smi shows (a gauge: the driver may reset it). Absent when ECC is off.' },
  { column: 'pci', unit: 'errs', metric: 'infermeter_gpu_pcie_replay_errors', scale: 1, otelUnit: '{error}', help: 'PCIe replay errors, the cumulative count nvidia-smi shows (dmon pci; a gauge: the driver may reset it).' },
  { column: 'rxpci', unit: 'MB/s', metric: 'infermeter_gpu_pcie_receive_bytes_per_second', scale: MB_PER_S, otelUnit: 'By/s', help: 'PCIe receive throughput (dmon rxpci MB/s, taken as 10^6 bytes/s; GPM pcirx when GPM is on).' },
  { column: 'txpci', unit: 'MB/s', metric: 'infermeter_gpu_pcie_transmit_bytes_per_second', scale: MB_PER_S, otelUnit: 'By/s', help: 'PCIe transmit throughput (dmon txpci MB/s, taken as 10^6 bytes/s; GPM pcitx when GPM is on).' },
  // GPM (--gpm-metrics): what the SMs do inside the time sm% counts as busy.
  gpm('gract', 'infermeter_gpu_graphics_active_ratio', 'Fraction of time the graphics/compute engine was active'),
  gpm('smutil', 'infermeter_gpu_sm_active_ratio', 'Fraction of time each SM had at least one warp resident, averaged over all SMs (unlike sm%, idle SMs count)'),
  gpm('smocc', 'infermeter_gpu_sm_occupancy_ratio', 'Resident warps as a fraction of the most an SM can hold, averaged over all SMs'),
  gpm('mmaact', 'infermeter_gpu_tensor_active_ratio', 'Fraction of cycles the tensor (MMA) pipes were busy'),
  gpm('dram', 'infermeter_gpu_dram_bandwidth_utilization_ratio', 'Fraction of peak DRAM (HBM/GDDR) bandwidth used: decode is memory-bound, so this tracks TPOT'),
  gpm('fp16', 'infermeter_gpu_fp16_active_ratio', 'Fraction of cycles the FP16 pipes were busy'),
  gpm('fp32', 'infermeter_gpu_fp32_active_ratio', 'Fraction of cycles the FP32 pipes were busy'),
  gpm('fp64', 'infermeter_gpu_fp64_active_ratio', 'Fraction of cycles the FP64 pipes were busy'),
  gpmRate('pcitx', 'infermeter_gpu_pcie_transmit_bytes_per_second', 'PCIe transmit throughput'),
  gpmRate('pcirx', 'infermeter_gpu_pcie_receive_bytes_per_second', 'PCIe receive throughput'),
  gpmRate('nvlrx', 'infermeter_gpu_nvlink_receive_bytes_per_second', 'NVLink receive throughput, all links'),
  gpmRate('nvltx', 'infermeter_gpu_nvlink_transmit_bytes_per_second', 'NVLink transmit throughput, all links'),
];

/**
 * The `--gpm-metrics` ids asked for (NVML's numbering, test/fixtures/SOURCES.md): always
 * the four that explain inference (SM activity, SM occupancy, tensor activity, DRAM), and
 * the PCIe and NVLink rates when the driver's `dmon -h` lists them.
 */
export const GPM_IDS: readonly { id: number; column: string; optional: boolean }[] = [
  { id: 2, column: 'smutil', optional: false },
  { id: 3, column: 'smocc', optional: false },
  { id: 5, column: 'mmaact', optional: false },
  { id: 10, column: 'dram', optional: false },
  { id: 20, column: 'pcitx', optional: true },
  { id: 21, column: 'pcirx', optional: true },
  { id: 60, column: 'nvlrx', optional: true },
  { id: 61, column: 'nvltx', optional: true },
];

/** Columns that identify a row rather than measure something: never warned about. */
export const DMON_KEY_COLUMNS = new Set(['gpu', 'Date', 'Time']);

/** Metrics from `--query-gpu` (static facts) and about the dmon child itself. */
export const GPU_INFO_METRIC = 'infermeter_gpu_info';
export const GPU_MEMORY_TOTAL_METRIC = 'infermeter_gpu_memory_total_bytes';
export const GPU_DMON_RESTARTS_METRIC = 'infermeter_gpu_dmon_restarts_total';
export const GPU_DMON_INVALID_LINES_METRIC = 'infermeter_gpu_dmon_invalid_lines_total';
export const GPU_SOURCE_INFO_METRIC = 'infermeter_gpu_source_info';
export const GPU_ENGINE_INFO_METRIC = 'infermeter_gpu_engine_info';
export const GPU_ENERGY_METRIC = 'infermeter_gpu_energy_joules_total';

/** The fields asked of `nvidia-smi --query-gpu` once at start, in this order. */
export const QUERY_FIELDS = ['index', 'uuid', 'name', 'driver_version', 'pci.bus_id', 'memory.total'] as const;

function sampleMetricDefs(): MetricDef[] {
  const seen = new Map<string, MetricDef>();
  for (const c of DMON_COLUMNS) {
    if (!seen.has(c.metric)) seen.set(c.metric, { name: c.metric, type: 'gauge', unit: c.otelUnit, help: c.help, labels: GPU_LABELS, source: 'gpu' });
  }
  return [...seen.values()];
}

/** The per-GPU gauges, one per metric the mapping tables feed (a sample's `values` keys). */
export const GPU_SAMPLE_METRICS: readonly MetricDef[] = sampleMetricDefs();

/** Metrics fed only by GPM columns (the PCIe rates also come from dmon -s t, so they are not here). */
export const GPM_METRIC_NAMES: ReadonlySet<string> = new Set(
  DMON_COLUMNS.filter((c) => c.unit.startsWith(GPM_UNIT_PREFIX) && !DMON_COLUMNS.some((o) => o.metric === c.metric && !o.unit.startsWith(GPM_UNIT_PREFIX))).map((c) => c.metric),
);

export const GPU_METRICS: readonly MetricDef[] = [
  ...GPU_SAMPLE_METRICS,
  { name: GPU_INFO_METRIC, type: 'gauge', unit: '1', labels: ['gpu', 'uuid', 'name', 'driver_version', 'pci_bus_id'], source: 'gpu',
    help: 'Static facts about each GPU (from nvidia-smi --query-gpu); always 1.' },
  { name: GPU_ENGINE_INFO_METRIC, type: 'gauge', unit: '1', labels: ['gpu', 'uuid', 'upstream'], source: 'gpu',
    help: 'Which upstream (engine) each GPU serves: from the upstream\'s gpus: setting, or from the processes nvidia-smi --query-compute-apps names that serve the upstream\'s local port; always 1. Join on gpu, uuid.' },
  { name: GPU_ENERGY_METRIC, type: 'counter', unit: 'J', labels: ['gpu'], source: 'gpu',
    help: 'Energy each GPU used since infermeter started counting: the increases of the driver\'s own energy counter where the source has one (dcgm-exporter DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION), else the power reading integrated over time (dmon pwr, NVML\'s 1 s average on Ampere and newer); never goes down across gaps or restarts of the source (docs/energy.md).' },
  { name: GPU_MEMORY_TOTAL_METRIC, type: 'gauge', unit: 'By', labels: GPU_LABELS, source: 'gpu',
    help: 'Total frame buffer memory (nvidia-smi memory.total, MiB converted to bytes).' },
  { name: GPU_DMON_RESTARTS_METRIC, type: 'counter', unit: '{restart}', labels: ['reason'], source: 'gpu',
    help: 'Restarts of the nvidia-smi dmon child, by reason (exited, stalled, spawn_failed).' },
  { name: GPU_DMON_INVALID_LINES_METRIC, type: 'counter', unit: '{line}', labels: [], source: 'gpu',
    help: 'Lines printed by nvidia-smi dmon that could not be read as a header or a sample, skipped.' },
  { name: GPU_SOURCE_INFO_METRIC, type: 'gauge', unit: '1', labels: ['source', 'gpm', 'reason'], source: 'gpu',
    help: 'Where GPU metrics come from (source nvidia-smi or dcgm-exporter) and whether SM occupancy, DRAM bandwidth and tensor activity are available (gpm probing, enabled, unavailable; reason says why not); always 1.' },
];

/** Finds the row for a header column and the unit printed under it (unit null: no unit line seen). */
export function lookupColumn(column: string, unit: string | null): DmonColumn | undefined {
  return DMON_COLUMNS.find((c) => c.column === column && (unit === null || c.unit === unit));
}
