/**
 * How many proxy workers `--workers auto` runs: the CPUs this process may use (its affinity
 * mask, from os.availableParallelism) and, inside a container, its cgroup CPU quota (a pod
 * limited to 2 CPUs on a 64-core node must not start 64 workers), capped at AUTO_MAX.
 */
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

/** Past this, one process's metrics side and the upstream are the limit, not the proxy loops. */
export const AUTO_MAX = 8;

/** CPUs allowed by a cgroup quota, from cgroup v2 `cpu.max` or v1 `cfs_quota_us`/`cfs_period_us`; null when unlimited or unknown. */
export function cgroupCpuLimit(read: (path: string) => string | null = readOrNull): number | null {
  const v2 = read('/sys/fs/cgroup/cpu.max');
  if (v2 !== null) {
    const [quota, period] = v2.trim().split(/\s+/);
    if (quota === 'max' || quota === undefined) return null;
    return quotaToCpus(Number(quota), Number(period ?? 100000));
  }
  const q = read('/sys/fs/cgroup/cpu/cpu.cfs_quota_us') ?? read('/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us');
  const p = read('/sys/fs/cgroup/cpu/cpu.cfs_period_us') ?? read('/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us');
  if (q === null || p === null) return null;
  return quotaToCpus(Number(q.trim()), Number(p.trim()));
}

function quotaToCpus(quota: number, period: number): number | null {
  if (!Number.isFinite(quota) || !Number.isFinite(period) || quota <= 0 || period <= 0) return null;
  return Math.max(1, Math.ceil(quota / period));
}

function readOrNull(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
}

export function autoWorkers(cpus = availableParallelism(), limit = cgroupCpuLimit()): number {
  return Math.max(1, Math.min(AUTO_MAX, cpus, limit ?? Infinity));
}

/** `--workers`: a whole number from 1 to 64, or `auto`. */
export function parseWorkers(value: string): number {
  const v = value.trim();
  if (v === 'auto') return autoWorkers();
  if (!/^\d+$/.test(v) || Number(v) < 1 || Number(v) > 64) throw new Error(`expected a number of workers from 1 to 64, or auto, got "${value}"`);
  return Number(v);
}
