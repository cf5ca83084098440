/**
 * Whether GPU Performance Monitoring works here, decided from what dmon does rather than
 * from a model list: a driver whose `dmon -h` lacks `--gpm-metrics`, a dmon that exits
 * before its first sample when asked for GPM (the driver rejects the option), or GPM
 * columns that stay "-" (or never appear) for a few samples (a GPU without GPM) all mean
 * dmon runs again without GPM. The first sample always reads "-": GPM needs two samples.
 */
import { GPM_METRIC_NAMES } from './columns.js';
import type { DmonSample } from './dmon.js';

export type GpmStatus = 'probing' | 'enabled' | 'unavailable';
/** not_found: the nvidia-smi binary is missing; help_failed: it ran, but `dmon -h` failed or timed out. */
export type GpmReason = '' | 'disabled' | 'not_found' | 'not_in_help' | 'help_failed' | 'rejected' | 'no_values' | 'no_prof_fields';

/** Samples of one GPU without any GPM value before GPM is given up (the first is always "-"). */
export const GPM_PROBE_SAMPLES = 5;

export class GpmProbe {
  status: GpmStatus;
  reason: GpmReason;
  private readonly empty = new Map<number, number>();

  constructor(asked: boolean, reasonIfNot: GpmReason = 'not_in_help') {
    this.status = asked ? 'probing' : 'unavailable';
    this.reason = asked ? '' : reasonIfNot;
  }

  /** Feeds one sample; true when GPM has just been found unavailable. */
  sample(s: DmonSample): boolean {
    if (this.status !== 'probing') return false;
    for (const name of GPM_METRIC_NAMES) {
      const v = s.values.get(name);
      if (v !== undefined && v !== null) {
        this.status = 'enabled';
        return false;
      }
    }
    const n = (this.empty.get(s.gpu) ?? 0) + 1;
    this.empty.set(s.gpu, n);
    return n >= GPM_PROBE_SAMPLES ? this.giveUp('no_values') : false;
  }

  /** A dmon asked for GPM ended before printing a sample; true when that means GPM is unavailable. */
  exitedBeforeSample(code: number | null): boolean {
    if (this.status !== 'probing' || code === null || code === 0) return false;
    return this.giveUp('rejected');
  }

  private giveUp(reason: GpmReason): true {
    this.status = 'unavailable';
    this.reason = reason;
    return true;
  }
}
