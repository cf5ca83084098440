/**
 * The machine snapshot's name for each per-GPU gauge (columns.ts, GPU_SAMPLE_METRICS): data,
 * like the column table. A reader of machine state reads `gpu.powerWatts`, never the metric
 * name; test/unit/collectors/machine-snapshot.test.ts checks that every gauge a sample can
 * carry (dmon columns and dcgm-exporter aliases alike) has exactly one field here.
 */
export const GPU_FIELDS = {
  powerWatts: 'infermeter_gpu_power_watts',
  temperatureCelsius: 'infermeter_gpu_temperature_celsius',
  memoryTemperatureCelsius: 'infermeter_gpu_memory_temperature_celsius',
  /** dmon sm: the "GPU utilization" of nvidia-smi. */
  utilization: 'infermeter_gpu_sm_utilization_ratio',
  memoryUtilization: 'infermeter_gpu_memory_utilization_ratio',
  encoderUtilization: 'infermeter_gpu_encoder_utilization_ratio',
  decoderUtilization: 'infermeter_gpu_decoder_utilization_ratio',
  jpegUtilization: 'infermeter_gpu_jpeg_utilization_ratio',
  ofaUtilization: 'infermeter_gpu_ofa_utilization_ratio',
  memoryClockHz: 'infermeter_gpu_memory_clock_hertz',
  smClockHz: 'infermeter_gpu_sm_clock_hertz',
  /** Throttle reasons: the share of the sample period under the power limit, and the thermal flag. */
  powerViolation: 'infermeter_gpu_power_violation_ratio',
  thermalViolation: 'infermeter_gpu_thermal_violation',
  memoryUsedBytes: 'infermeter_gpu_memory_used_bytes',
  bar1UsedBytes: 'infermeter_gpu_bar1_used_bytes',
  protectedMemoryUsedBytes: 'infermeter_gpu_protected_memory_used_bytes',
  eccSingleBitErrors: 'infermeter_gpu_ecc_single_bit_errors',
  eccDoubleBitErrors: 'infermeter_gpu_ecc_double_bit_errors',
  pcieReplayErrors: 'infermeter_gpu_pcie_replay_errors',
  pcieReceiveBytesPerSecond: 'infermeter_gpu_pcie_receive_bytes_per_second',
  pcieTransmitBytesPerSecond: 'infermeter_gpu_pcie_transmit_bytes_per_second',
  // GPM (dmon --gpm-metrics) or DCGM profiling ratios
  graphicsActive: 'infermeter_gpu_graphics_active_ratio',
  smActive: 'infermeter_gpu_sm_active_ratio',
  smOccupancy: 'infermeter_gpu_sm_occupancy_ratio',
  tensorActive: 'infermeter_gpu_tensor_active_ratio',
  dramActive: 'infermeter_gpu_dram_bandwidth_utilization_ratio',
  fp16Active: 'infermeter_gpu_fp16_active_ratio',
  fp32Active: 'infermeter_gpu_fp32_active_ratio',
  fp64Active: 'infermeter_gpu_fp64_active_ratio',
  nvlinkReceiveBytesPerSecond: 'infermeter_gpu_nvlink_receive_bytes_per_second',
  nvlinkTransmitBytesPerSecond: 'infermeter_gpu_nvlink_transmit_bytes_per_second',
} as const;

export type GpuField = keyof typeof GPU_FIELDS;
