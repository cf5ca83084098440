/**
 * src/metrics/bottleneck/machine.ts, per model (issue 26): a model served by upstream U reads
 * the engine series with upstream=U and the GPUs whose infermeter_gpu_engine_info row names U;
 * with no upstreams known, or no join rows, the reading is the whole machine's, as before.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Counter, Gauge, Registry } from 'prom-client';
import { MachineHistory, readMachine, scopeOf } from '../../../src/metrics/bottleneck/machine.js';

/** Two engines, a and b; a queues with a full cache on GPU 0, b is idle on GPU 1, which is power-throttled. */
function twoEngines(join: boolean): { registry: Registry; preempt: Counter } {
  const registry = new Registry();
  const g = (name: string, labels: string[]) => new Gauge({ name, help: name, labelNames: labels, registers: [registry] });
  const waiting = g('infermeter_engine_requests_waiting', ['engine', 'upstream']);
  const running = g('infermeter_engine_requests_running', ['engine', 'upstream']);
  const kv = g('infermeter_engine_kv_cache_usage_ratio', ['engine', 'upstream']);
  const preempt = new Counter({ name: 'infermeter_engine_preemptions_total', help: 'p', labelNames: ['engine', 'upstream'], registers: [registry] });
  waiting.set({ engine: 'vllm', upstream: 'a' }, 12);
  waiting.set({ engine: 'vllm', upstream: 'b' }, 0);
  running.set({ engine: 'vllm', upstream: 'a' }, 8);
  running.set({ engine: 'vllm', upstream: 'b' }, 2);
  kv.set({ engine: 'vllm', upstream: 'a' }, 0.96);
  kv.set({ engine: 'vllm', upstream: 'b' }, 0.1);
  preempt.inc({ engine: 'vllm', upstream: 'a' }, 0);
  preempt.inc({ engine: 'vllm', upstream: 'b' }, 0);
  const util = g('infermeter_gpu_sm_utilization_ratio', ['gpu', 'uuid']);
  const pviol = g('infermeter_gpu_power_violation_ratio', ['gpu', 'uuid']);
  util.set({ gpu: '0', uuid: 'GPU-0' }, 0.9);
  util.set({ gpu: '1', uuid: 'GPU-1' }, 0.3);
  pviol.set({ gpu: '0', uuid: 'GPU-0' }, 0);
  pviol.set({ gpu: '1', uuid: 'GPU-1' }, 0.7);
  if (join) {
    const info = g('infermeter_gpu_engine_info', ['gpu', 'uuid', 'upstream']);
    info.set({ gpu: '0', uuid: 'GPU-0', upstream: 'a' }, 1);
    info.set({ gpu: '1', uuid: 'GPU-1', upstream: 'b' }, 1);
  }
  return { registry, preempt };
}

async function history(registry: Registry, preempt: Counter): Promise<MachineHistory> {
  const h = new MachineHistory();
  h.add(await readMachine(registry, 0), -Infinity);
  preempt.inc({ engine: 'vllm', upstream: 'a' }, 10);
  preempt.inc({ engine: 'vllm', upstream: 'b' }, 2);
  h.add(await readMachine(registry, 10_000), -Infinity);
  return h;
}

test('a model of upstream a reads a\'s engine series and GPU 0 only; one of b reads b\'s and GPU 1; the evidence basis names them', async () => {
  const { registry, preempt } = twoEngines(true);
  const h = await history(registry, preempt);
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
  const { registry, preempt } = twoEngines(true);
  const h = await history(registry, preempt);
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
  const { registry, preempt } = twoEngines(false);
  const h = await history(registry, preempt);
  const a = h.signals(1, ['a']);
  assert.equal(a.values.engineWaiting, 12);
  assert.equal(a.values.gpuPowerViolation, 0.7);
  assert.equal(a.values.gpuUtilization, 0.6);
  assert.equal(a.basis.gpuPowerViolation, 'every GPU (no infermeter_gpu_engine_info rows)');
});

test('join rows that name other upstreams only: the model has no GPU signal, and the basis says no GPU is tied to it', async () => {
  const { registry, preempt } = twoEngines(true);
  const h = await history(registry, preempt);
  const c = h.signals(1, ['c']);
  assert.equal(c.values.gpuPowerViolation, null);
  assert.equal(c.values.gpuUtilization, null);
  assert.equal(c.values.engineWaiting, null);
  assert.equal(c.basis.gpuUtilization, 'no GPU is tied to upstream c (infermeter_gpu_engine_info)');
  assert.equal(scopeOf(undefined, ['c']), null, 'before the first reading: the whole machine');
});
