import type { CollectorEntry } from '../types.js';
import { GpuCollector } from './collector.js';

/** The collector table's row for nvidia-smi. */
export const GPU_COLLECTOR: CollectorEntry = {
  name: 'gpu',
  interval: (c) => c.gpuInterval,
  enabled: (c) => c.collectorGpu,
  create: ({ registry, config, log }) =>
    new GpuCollector({ binary: config.nvidiaSmi, columns: config.dmonColumns, intervalSeconds: config.gpuInterval }, registry, log),
};
