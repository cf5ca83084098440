/**
 * src/metrics/bottleneck/machine.ts, per model: a model served by upstream U reads the
 * engine reading of upstream U and the GPUs whose infermeter_gpu_engine_info row names U;
 * with no upstreams known, or no join rows, the reading is the whole machine's, as before.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MachineHistory, readMachine, scopeOf } from '../../../src/metrics/bottleneck/machine.js';
import { MachineSnapshot } from '../../../src/collectors/snapshot.js';
import { engineOf, gpuOf } from '../../helpers/machine.js';

/** Two engines, a and b; a queues with a full cache on GPU 0, b is idle on GPU 1, which is power-throttled. */
function twoEngines(join: boolean): { machine: MachineSnapshot; preempt: (a: number, b: number) => void } {
  const machine = new MachineSnapshot();
  const total = { a: 0, b: 0 };
  const engines = () => {
    machine.setEngine(engineOf('a', { waiting: 12, running: 8, kvCacheUsage: 0.96, preemptionsTotal: total.a }));
    machine.setEngine(engineOf('b', { waiting: 0, running: 2, kvCacheUsage: 0.1, preemptionsTotal: total.b }));
  };
  engines();
  machine.setGpu(gpuOf(0, { utilization: 0.9, powerViolation: 0 }));
  machine.setGpu(gpuOf(1, { utilization: 0.3, powerViolation: 0.7 }));
  if (join) machine.setGpuEngines({ rows: [{ gpu: 0, uuid: 'GPU-0', upstream: 'a' }, { gpu: 1, uuid: 'GPU-1', upstream: 'b' }], at: 0 });
  return { machine, preempt: (a, b) => ((total.a += a), (total.b += b), engines()) };
}

async function history(machine: MachineSnapshot, preempt: (a: number, b: number) => void): Promise<MachineHistory> {
  const h = new MachineHistory();
  h.add(readMachine(machine.read(), 0), -Infinity);
  preempt(10, 2);
  h.add(readMachine(machine.read(), 10_000), -Infinity);
  return h;
}

test('a model of upstream a reads a\'s engine series and GPU 0 only; one of b reads b\'s and GPU 1; the evidence basis names them', async () => {
  const { machine, preempt } = twoEngines(true);
  const h = await history(machine, preempt);
  const a = h.signals(1, ['a']);
  assert.deepEqual(a.scope && { upstreams: a.scope.upstreams, gpus: [...a.scope.gpus!] }, { upstreams: ['a'], gpus: ['0'] });
  assert.equal(a.values.engineWaiting, 12);
  assert.equal(a.values.engineRunning, 8);
  assert.equal(a.values.kvCacheUsage, 0.96);
  assert.equal(a.values.preemptionsPerSecond, 1);
  assert.equal(a.values.gpuUtilization, 0.9);
  assert.equal(a.values.gpuPowerViolation, 0);
  assert.equal(a.basis.engineWaiting, 'engine series of upstream a');
  assert.equal(a.basis.gpuPowerViolation, 'GPU 0 of upstream a (infermeter_gpu_engine_info)');

  const b = h.signals(1, ['b']);
  assert.equal(b.values.engineWaiting, 0);
  assert.equal(b.values.kvCacheUsage, 0.1);
  assert.equal(b.values.preemptionsPerSecond, 0.2);
  assert.equal(b.values.gpuPowerViolation, 0.7);
  assert.equal(b.values.gpuUtilization, 0.3);
  assert.equal(b.basis.gpuPowerViolation, 'GPU 1 of upstream b (infermeter_gpu_engine_info)');

  // A model both list (replicas): both engines summed, both GPUs.
  const both = h.signals(1, ['a', 'b']);
  assert.equal(both.values.engineWaiting, 12);
  assert.equal(both.values.engineRunning, 10);
  assert.equal(both.values.gpuPowerViolation, 0.7);
  assert.match(both.basis.gpuUtilization!, /^GPU 0, 1 of upstream a, b/);
});

test('no upstream known for the model (one upstream, an allowlist label): the whole machine, exactly as before, and no basis added', async () => {
  const { machine, preempt } = twoEngines(true);
  const h = await history(machine, preempt);
  for (const upstreams of [undefined, []]) {
    const all = h.signals(1, upstreams);
    assert.equal(all.scope, null);
    assert.equal(all.values.engineWaiting, 12);
    assert.equal(all.values.engineRunning, 10);
    assert.equal(all.values.kvCacheUsage, (0.96 + 0.1) / 2, 'the mean over every series');
    assert.equal(all.values.preemptionsPerSecond, 1.2);
    assert.equal(all.values.gpuUtilization, 0.6);
    assert.equal(all.values.gpuPowerViolation, 0.7, 'the worst GPU of the machine');
    assert.deepEqual(all.basis, {});
  }
});

test('no join rows: the model\'s own engine series, but every GPU, and the basis says why', async () => {
  const { machine, preempt } = twoEngines(false);
  const h = await history(machine, preempt);
  const a = h.signals(1, ['a']);
  assert.equal(a.values.engineWaiting, 12);
  assert.equal(a.values.gpuPowerViolation, 0.7);
  assert.equal(a.values.gpuUtilization, 0.6);
  assert.equal(a.basis.gpuPowerViolation, 'every GPU (no infermeter_gpu_engine_info rows)');
});

test('join rows that name other upstreams only: the model has no GPU signal, and the basis says no GPU is tied to it', async () => {
  const { machine, preempt } = twoEngines(true);
  const h = await history(machine, preempt);
  const c = h.signals(1, ['c']);
  assert.equal(c.values.gpuPowerViolation, null);
  assert.equal(c.values.gpuUtilization, null);
  assert.equal(c.values.engineWaiting, null);
  assert.equal(c.basis.gpuUtilization, 'no GPU is tied to upstream c (infermeter_gpu_engine_info)');
  assert.equal(scopeOf(undefined, ['c']), null, 'before the first reading: the whole machine');
});
