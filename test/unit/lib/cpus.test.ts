/** --workers auto: affinity, cgroup v1/v2 quotas, the cap; and the flag's errors. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { autoWorkers, cgroupCpuLimit, parseWorkers } from '../../../src/lib/cpus.js';

const files = (map: Record<string, string>) => (path: string) => map[path] ?? null;

test('cgroup v2 cpu.max: a quota rounds up to whole CPUs, max means unlimited', () => {
  assert.equal(cgroupCpuLimit(files({ '/sys/fs/cgroup/cpu.max': '200000 100000\n' })), 2);
  assert.equal(cgroupCpuLimit(files({ '/sys/fs/cgroup/cpu.max': '150000 100000\n' })), 2);
  assert.equal(cgroupCpuLimit(files({ '/sys/fs/cgroup/cpu.max': '50000 100000\n' })), 1);
  assert.equal(cgroupCpuLimit(files({ '/sys/fs/cgroup/cpu.max': 'max 100000\n' })), null);
});

test('cgroup v1 cfs quota and period; -1 means unlimited; nothing readable means unknown', () => {
  assert.equal(cgroupCpuLimit(files({ '/sys/fs/cgroup/cpu/cpu.cfs_quota_us': '400000', '/sys/fs/cgroup/cpu/cpu.cfs_period_us': '100000' })), 4);
  assert.equal(cgroupCpuLimit(files({ '/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us': '-1', '/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us': '100000' })), null);
  assert.equal(cgroupCpuLimit(files({})), null);
});

// README: "--workers auto takes the CPUs this process may use (a cgroup CPU quota counts), at most 8".
test('auto: the smaller of the CPUs and the quota, at most 8 (README), at least 1', () => {
  assert.equal(autoWorkers(16, null), 8);
  assert.equal(autoWorkers(9, null), 8);
  assert.equal(autoWorkers(8, null), 8);
  assert.equal(autoWorkers(7, null), 7);
  assert.equal(autoWorkers(16, 12), 8);
  assert.equal(autoWorkers(16, 3), 3);
  assert.equal(autoWorkers(2, 8), 2);
  assert.equal(autoWorkers(1, null), 1);
});

test('--workers takes 1..64 or auto, and names what it expected otherwise', () => {
  assert.equal(parseWorkers('4'), 4);
  assert.ok(parseWorkers('auto') >= 1);
  for (const bad of ['0', '-1', '1.5', 'many', '65', '']) assert.throws(() => parseWorkers(bad), /number of workers from 1 to 64, or auto/);
});
