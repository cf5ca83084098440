import type { CollectorEntry } from '../types.js';
import { GpuCollector } from './collector.js';
import { DcgmCollector } from './dcgm.js';
import { resolveGpuSource } from './source.js';

/** The collector table's row for GPUs: nvidia-smi dmon or dcgm-exporter, per --gpu-source. */
export const GPU_COLLECTOR: CollectorEntry = {
  name: 'gpu',
  interval: (c) => c.gpuInterval,
  enabled: (c) => c.collectorGpu,
  create: ({ registry, config, log, machine }) => {
    const source = resolveGpuSource(config);
    log.info({ source, setting: config.gpuSource }, 'GPU source');
    if (source === 'dcgm-exporter') return new DcgmCollector(config.dcgmExporterUrl, registry, log, machine);
    return new GpuCollector({ binary: config.nvidiaSmi, columns: config.dmonColumns, intervalSeconds: config.gpuInterval }, registry, log, machine);
  },
};
