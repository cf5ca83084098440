/**
 * Which GPU source runs (--gpu-source): nvidia-smi dmon, or a dcgm-exporter scrape. `auto`
 * takes nvidia-smi when the binary is there, else dcgm-exporter when a URL is set, else
 * nvidia-smi (which then reports not_found as usual). Decided once, at start.
 */
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import type { GpuSourceName } from './source-info.js';

export type GpuSourceSetting = 'auto' | GpuSourceName;

export interface GpuSourceConfig {
  gpuSource: GpuSourceSetting;
  nvidiaSmi: string;
  dcgmExporterUrl: string;
}

export function resolveGpuSource(c: GpuSourceConfig, onPath: (binary: string) => boolean = isExecutableOnPath): GpuSourceName {
  if (c.gpuSource !== 'auto') return c.gpuSource;
  if (onPath(c.nvidiaSmi)) return 'nvidia-smi';
  return c.dcgmExporterUrl ? 'dcgm-exporter' : 'nvidia-smi';
}

/** Like `command -v`: a path is checked as given, a bare name in each PATH directory. */
export function isExecutableOnPath(binary: string, path = process.env['PATH'] ?? ''): boolean {
  const candidates = binary.includes('/') ? [binary] : path.split(delimiter).filter(Boolean).map((dir) => join(dir, binary));
  return candidates.some((file) => {
    try {
      accessSync(file, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}
