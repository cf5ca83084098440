/**
 * Every metric name the generated rules and dashboards read, in one table. Each must be in
 * the catalog (src/metrics/catalog.ts); test/unit/ops/rules-names.test.ts checks that, so a
 * rename in a collector's data table fails a test here instead of silencing an alert.
 */

export const M = {
  ttft: 'gen_ai_server_time_to_first_token_seconds',
  ttfo: 'infermeter_time_to_first_output_seconds',
  tpot: 'gen_ai_server_time_per_output_token_seconds',
  e2e: 'gen_ai_server_request_duration_seconds',
  chunk: 'infermeter_inter_chunk_latency_seconds',
  ttftByPrompt: 'infermeter_time_to_first_token_by_prompt_seconds',
  tpotByConcurrency: 'infermeter_time_per_output_token_by_concurrency_seconds',
  chunkByConcurrency: 'infermeter_inter_chunk_latency_by_concurrency_seconds',
  requests: 'infermeter_requests_total',
  streamEndings: 'infermeter_stream_endings_total',
  tokens: 'infermeter_tokens_total',
  inFlight: 'infermeter_requests_in_flight',
  sloRequests: 'infermeter_slo_requests_total',
  goodput: 'infermeter_goodput_requests_total',
  judged: 'infermeter_slo_judged_requests_total',
  sloThreshold: 'infermeter_slo_threshold_seconds',
  collectorUp: 'infermeter_collector_up',
  collectorLastSuccess: 'infermeter_collector_last_success_timestamp_seconds',
  configReloadSuccessful: 'infermeter_config_last_reload_successful',
  // headroom (metrics/headroom/)
  capacity: 'infermeter_capacity_requests_per_second',
  loadRatio: 'infermeter_load_ratio',
  // engine collector (normalized names, label `engine`)
  kvCache: 'infermeter_engine_kv_cache_usage_ratio',
  running: 'infermeter_engine_requests_running',
  waiting: 'infermeter_engine_requests_waiting',
  prefixQueries: 'infermeter_engine_prefix_cache_queries_total',
  prefixHits: 'infermeter_engine_prefix_cache_hits_total',
  preemptions: 'infermeter_engine_preemptions_total',
  engineTtft: 'infermeter_engine_time_to_first_token_seconds',
  engineQueue: 'infermeter_engine_queue_time_seconds',
  enginePrefill: 'infermeter_engine_prefill_time_seconds',
  // GPU collector (nvidia-smi, labels gpu and uuid)
  gpuUtil: 'infermeter_gpu_sm_utilization_ratio',
  /** Which upstream each GPU serves (issue 26): join on gpu, uuid. */
  gpuEngine: 'infermeter_gpu_engine_info',
  gpuMemUtil: 'infermeter_gpu_memory_utilization_ratio',
  gpuMemUsed: 'infermeter_gpu_memory_used_bytes',
  gpuMemTotal: 'infermeter_gpu_memory_total_bytes',
  gpuPower: 'infermeter_gpu_power_watts',
  gpuTemp: 'infermeter_gpu_temperature_celsius',
  gpuSmClock: 'infermeter_gpu_sm_clock_hertz',
  gpuMemClock: 'infermeter_gpu_memory_clock_hertz',
  gpuPcieRx: 'infermeter_gpu_pcie_receive_bytes_per_second',
  gpuPcieTx: 'infermeter_gpu_pcie_transmit_bytes_per_second',
  gpuPowerViolation: 'infermeter_gpu_power_violation_ratio',
  /** 1 while thermally throttled, else 0 (dmon tviol is a flag, not a percentage). */
  gpuThermalViolation: 'infermeter_gpu_thermal_violation',
  // GPM (nvidia-smi dmon --gpm-metrics) or DCGM profiling fields
  gpuSmActive: 'infermeter_gpu_sm_active_ratio',
  gpuSmOccupancy: 'infermeter_gpu_sm_occupancy_ratio',
  gpuTensor: 'infermeter_gpu_tensor_active_ratio',
  gpuDram: 'infermeter_gpu_dram_bandwidth_utilization_ratio',
  gpuNvlinkRx: 'infermeter_gpu_nvlink_receive_bytes_per_second',
  gpuNvlinkTx: 'infermeter_gpu_nvlink_transmit_bytes_per_second',
  gpuSourceInfo: 'infermeter_gpu_source_info',
  // energy and cost (metrics/energy/defs.ts, collectors/gpu/columns.ts)
  gpuEnergy: 'infermeter_gpu_energy_joules_total',
  energy: 'infermeter_energy_joules_total',
  cost: 'infermeter_cost_total',
  energyTokens: 'infermeter_energy_output_tokens_total',
} as const;

/** The SLO histogram each SLO name is measured by. */
export const SLO_HISTOGRAM = { ttft: M.ttft, ttfo: M.ttfo, tpot: M.tpot, e2e: M.e2e } as const;

/** Collector names as the runner labels them (`collector` label). */
export const GPU_COLLECTOR = 'gpu';
