/** `infermeter_gpu_source_info{source,gpm,reason}`: which GPU source runs and whether GPM figures are available. */
import { Gauge, type Registry } from 'prom-client';
import { GPU_METRICS, GPU_SOURCE_INFO_METRIC } from './columns.js';
import type { GpmStatus } from './gpm.js';

export type GpuSourceName = 'nvidia-smi' | 'dcgm-exporter';

export class GpuSourceInfo {
  private readonly gauge: Gauge;
  private key = '';

  constructor(registry: Registry, private readonly source: GpuSourceName) {
    const d = GPU_METRICS.find((m) => m.name === GPU_SOURCE_INFO_METRIC)!;
    this.gauge = new Gauge({ name: d.name, help: d.help, labelNames: [...d.labels], registers: [registry] });
  }

  /** Replaces the one series; returns true when it changed. */
  set(gpm: GpmStatus, reason: string): boolean {
    const key = `${gpm}/${reason}`;
    if (key === this.key) return false;
    this.key = key;
    this.gauge.reset();
    this.gauge.set({ source: this.source, gpm, reason }, 1);
    return true;
  }
}
