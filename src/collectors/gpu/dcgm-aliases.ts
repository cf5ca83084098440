/**
 * dcgm-exporter fields → infermeter_gpu_* names: data, not code (like the engine
 * collector's aliases.ts). Each metric lists candidates in order of preference; the first
 * whose every field a GPU has wins, and its fields are added, then scaled to base units.
 * Fields are those of dcgm-exporter's default counters (test/fixtures/dcgm-exporter-default-counters.csv)
 * and the DCGM_FI_PROF_* profiling fields, which DCGM reports as 0-1 ratios and bytes/s.
 *
 * Not mapped, on purpose: DCGM_FI_DEV_PCIE_{TX,RX}_THROUGHPUT (the CSV calls them counters
 * "in KB" while NVML reports KB/s; the PROF byte rates say the same without the doubt),
 * the *_VIOLATION fields (cumulative microseconds, not a share of the last sample),
 * DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL (a counter), XID, remapped rows, vGPU license. Energy is
 * not a gauge: DCGM_ENERGY below feeds the energy counter (energy.ts), beside the gauges.
 */
import { MIB } from './columns.js';

export interface DcgmCandidate {
  fields: readonly string[];
  scale: number;
}

const f = (field: string, scale = 1): DcgmCandidate => ({ fields: [field], scale });

export const DCGM_ALIASES: Readonly<Record<string, readonly DcgmCandidate[]>> = {
  infermeter_gpu_power_watts: [f('DCGM_FI_DEV_POWER_USAGE')],
  infermeter_gpu_temperature_celsius: [f('DCGM_FI_DEV_GPU_TEMP')],
  infermeter_gpu_memory_temperature_celsius: [f('DCGM_FI_DEV_MEMORY_TEMP')],
  infermeter_gpu_sm_utilization_ratio: [f('DCGM_FI_DEV_GPU_UTIL', 0.01)],
  infermeter_gpu_memory_utilization_ratio: [f('DCGM_FI_DEV_MEM_COPY_UTIL', 0.01)],
  infermeter_gpu_encoder_utilization_ratio: [f('DCGM_FI_DEV_ENC_UTIL', 0.01)],
  infermeter_gpu_decoder_utilization_ratio: [f('DCGM_FI_DEV_DEC_UTIL', 0.01)],
  infermeter_gpu_sm_clock_hertz: [f('DCGM_FI_DEV_SM_CLOCK', 1e6)],
  infermeter_gpu_memory_clock_hertz: [f('DCGM_FI_DEV_MEM_CLOCK', 1e6)],
  infermeter_gpu_memory_used_bytes: [f('DCGM_FI_DEV_FB_USED', MIB)],
  infermeter_gpu_pcie_replay_errors: [f('DCGM_FI_DEV_PCIE_REPLAY_COUNTER')],
  infermeter_gpu_pcie_transmit_bytes_per_second: [f('DCGM_FI_PROF_PCIE_TX_BYTES')],
  infermeter_gpu_pcie_receive_bytes_per_second: [f('DCGM_FI_PROF_PCIE_RX_BYTES')],
  infermeter_gpu_nvlink_transmit_bytes_per_second: [f('DCGM_FI_PROF_NVLINK_TX_BYTES')],
  infermeter_gpu_nvlink_receive_bytes_per_second: [f('DCGM_FI_PROF_NVLINK_RX_BYTES')],
  infermeter_gpu_graphics_active_ratio: [f('DCGM_FI_PROF_GR_ENGINE_ACTIVE')],
  infermeter_gpu_sm_active_ratio: [f('DCGM_FI_PROF_SM_ACTIVE')],
  infermeter_gpu_sm_occupancy_ratio: [f('DCGM_FI_PROF_SM_OCCUPANCY')],
  infermeter_gpu_tensor_active_ratio: [f('DCGM_FI_PROF_PIPE_TENSOR_ACTIVE')],
  infermeter_gpu_dram_bandwidth_utilization_ratio: [f('DCGM_FI_PROF_DRAM_ACTIVE')],
  infermeter_gpu_fp16_active_ratio: [f('DCGM_FI_PROF_PIPE_FP16_ACTIVE')],
  infermeter_gpu_fp32_active_ratio: [f('DCGM_FI_PROF_PIPE_FP32_ACTIVE')],
  infermeter_gpu_fp64_active_ratio: [f('DCGM_FI_PROF_PIPE_FP64_ACTIVE')],
};

/** NVML's total energy since the driver was loaded, in mJ: the driver's own counter, used as is (energy.ts). */
export const DCGM_ENERGY: readonly DcgmCandidate[] = [f('DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION', 0.001)];

/** nvidia-smi's memory.total includes what the driver reserves; DCGM reports it apart. */
export const DCGM_MEMORY_TOTAL: readonly DcgmCandidate[] = [
  f('DCGM_FI_DEV_FB_TOTAL', MIB),
  { fields: ['DCGM_FI_DEV_FB_USED', 'DCGM_FI_DEV_FB_FREE', 'DCGM_FI_DEV_FB_RESERVED'], scale: MIB },
  { fields: ['DCGM_FI_DEV_FB_USED', 'DCGM_FI_DEV_FB_FREE'], scale: MIB },
];

/** dcgm-exporter's labels for what nvidia-smi --query-gpu gives (the gpu label is the index). */
export const DCGM_LABELS = { uuid: 'UUID', name: 'modelName', driverVersion: 'DCGM_FI_DRIVER_VERSION', pciBusId: 'pci_bus_id' } as const;

/** Labels that mark a MIG instance's series; those are not whole-GPU figures and are skipped. */
export const DCGM_MIG_LABELS = ['GPU_I_ID', 'GPU_I_PROFILE'] as const;
