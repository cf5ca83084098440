/**
 * Which `nvidia-smi dmon` commands to run, as pure functions: the capabilities read from
 * `dmon -h`, the `--gpm-metrics` ids asked for, and one command per group of 16 GPUs
 * (dmon monitors at most 16 devices; `-i` picks each group).
 */
import { GPM_IDS } from './columns.js';

/** dmon's device limit ("Monitoring is limited to a maximum of 16 devices"). */
export const DMON_MAX_DEVICES = 16;

/**
 * 535-series drivers show 4 GPUs in dmon unless this is set, and up to 16 with it; newer
 * drivers ignore it. Set for every dmon child.
 */
export const SHOW_ALL_DEVICES_ENV = { NVSMI_SHOW_ALL_DEVICES: '1' } as const;

export interface DmonHelp {
  /** The driver's dmon takes `--gpm-metrics`. */
  gpmMetrics: boolean;
  /** The driver's dmon takes `--gpm-options` (`d`: device-level metrics, not per MIG instance). */
  gpmOptions: boolean;
  /** GPM ids the help lists; empty when it lists none in a form read here. */
  gpmIds: ReadonlySet<number>;
}

/**
 * Reads `nvidia-smi dmon -h`. Ids are taken from lines such as `SM Occupancy = 3` or
 * `3 - SM Occupancy` (no capture of a real help text is in the fixtures, so both forms are
 * accepted and anything else lists no ids).
 */
export function parseDmonHelp(text: string): DmonHelp {
  const ids = new Set<number>();
  if (/--gpm-metrics/.test(text)) {
    for (const line of text.split(/\r?\n/)) {
      const m = /^\s*[A-Za-z][\w ./-]*?\s*=\s*(\d{1,3})\s*$/.exec(line) ?? /^\s*(\d{1,3})\s*[-:]\s+[A-Za-z]/.exec(line);
      if (m) ids.add(Number(m[1]));
    }
  }
  return { gpmMetrics: /--gpm-metrics/.test(text), gpmOptions: /--gpm-options/.test(text), gpmIds: ids };
}

/** The ids to ask for: the four always (when the help lists none), optional ones only when listed. */
export function gpmIdsFor(help: DmonHelp): number[] {
  if (!help.gpmMetrics) return [];
  return GPM_IDS.filter((g) => (help.gpmIds.size === 0 ? !g.optional : help.gpmIds.has(g.id))).map((g) => g.id);
}

export interface DmonPlan {
  columns: string;
  intervalSeconds: number;
  /** GPUs on the node (from --query-gpu), or null while unknown. */
  gpuCount: number | null;
  /** `--gpm-metrics` ids; empty for none. */
  gpmIds: readonly number[];
  gpmOptions: boolean;
}

/** One argument list per dmon child. */
export function dmonCommands(p: DmonPlan): string[][] {
  const base = ['dmon', '-s', p.columns, '-o', 'T', '-d', String(p.intervalSeconds)];
  if (p.gpmIds.length > 0) base.push('--gpm-metrics', p.gpmIds.join(','), ...(p.gpmOptions ? ['--gpm-options', 'd'] : []));
  if (p.gpuCount === null || p.gpuCount <= DMON_MAX_DEVICES) return [base];
  const out: string[][] = [];
  for (let first = 0; first < p.gpuCount; first += DMON_MAX_DEVICES) {
    const ids = Array.from({ length: Math.min(DMON_MAX_DEVICES, p.gpuCount - first) }, (_, i) => first + i);
    out.push([...base, '-i', ids.join(',')]);
  }
  return out;
}
