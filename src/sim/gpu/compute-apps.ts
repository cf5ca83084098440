/**
 * The fake's `--query-compute-apps=…`: the processes holding a GPU context, one row per
 * (process, GPU), as nvidia-smi prints them. Which processes run where is a setting
 * (FAKE_NVIDIA_SMI_COMPUTE_APPS="pid:gpu[:MiB],..."), so a test can name the pid of a
 * simulator it started and check that infermeter ties that GPU to that engine.
 */
import type { CsvFormat } from './format.js';

export interface ComputeApp {
  pid: number;
  gpu: number;
  usedMiB: number;
}

interface AppRow {
  app: ComputeApp;
  uuid: string;
  busId: string;
  name: string;
}

/** The fields this fake answers (real nvidia-smi has a few more), with their unit. */
export const COMPUTE_APP_FIELDS: Record<string, { unit: string | null; value: (r: AppRow) => string | number }> = {
  pid: { unit: null, value: (r) => r.app.pid },
  gpu_uuid: { unit: null, value: (r) => r.uuid },
  gpu_bus_id: { unit: null, value: (r) => r.busId },
  process_name: { unit: null, value: (r) => r.name },
  used_memory: { unit: 'MiB', value: (r) => r.app.usedMiB },
  used_gpu_memory: { unit: 'MiB', value: (r) => r.app.usedMiB },
};

/** The entries of FAKE_NVIDIA_SMI_COMPUTE_APPS; throws naming the first malformed one. */
export function parseComputeApps(spec: string): ComputeApp[] {
  const out: ComputeApp[] = [];
  for (const part of spec.split(',').map((s) => s.trim()).filter(Boolean)) {
    const m = /^(\d+):(\d+)(?::(\d+))?$/.exec(part);
    if (!m) throw new Error(`FAKE_NVIDIA_SMI_COMPUTE_APPS: expected pid:gpu[:MiB] entries, got "${part}"`);
    out.push({ pid: Number(m[1]), gpu: Number(m[2]), usedMiB: m[3] === undefined ? 1024 : Number(m[3]) });
  }
  return out;
}

/** nvidia-smi's answer: header (unless noheader), one line per app; "No running processes found" is not printed in CSV mode. */
export function computeAppsCsv(fields: readonly string[], rows: readonly AppRow[], format: CsvFormat): string {
  const defs = fields.map((f) => COMPUTE_APP_FIELDS[f]!);
  const lines: string[] = [];
  if (format.header) lines.push(fields.map((f, i) => (defs[i]!.unit ? `${f} [${defs[i]!.unit}]` : f)).join(', '));
  for (const r of rows) lines.push(defs.map((d) => (format.units && d.unit ? `${d.value(r)} ${d.unit}` : String(d.value(r)))).join(', '));
  return lines.length === 0 ? '' : lines.join('\n') + '\n';
}

export type { AppRow };
