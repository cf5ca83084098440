/**
 * Auto attribution: with no `gpus:`, each local upstream's GPUs are those on which
 * `nvidia-smi --query-compute-apps` names a process of the tree listening on its port.
 * The fake nvidia-smi is told the simulators' real pids; /proc is the machine's own.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSimulator, type SimulatorProcess } from '../../src/sim/child.js';
import { InfermeterProcess } from '../fakes/infermeter-process.js';
import { FAKE_NVIDIA_SMI } from '../fakes/gpu.js';
import { waitForMetrics } from '../helpers.js';

const sims: SimulatorProcess[] = [];
let meter: InfermeterProcess | null = null;
after(async () => {
  await meter?.stop();
  await Promise.all(sims.map((s) => s.close()));
});

test('GPU join series from the compute apps of the process listening on each upstream\'s port, without gpus:', { skip: process.platform !== 'linux' && 'needs /proc' }, async () => {
  const a = await spawnSimulator(['--listen', '127.0.0.1:0', '--models', 'model-a']);
  const b = await spawnSimulator(['--listen', '127.0.0.1:0', '--models', 'model-b']);
  sims.push(a, b);
  const dir = mkdtempSync(join(tmpdir(), 'infermeter-attr-'));
  const config = join(dir, 'config.yaml');
  writeFileSync(config, `upstreams:\n  - { name: a, url: "${a.url}" }\n  - { name: b, url: "${b.url}" }\n`);
  // GPU 0 and 2 hold b's context, GPU 1 a's; GPU 3 belongs to some other process (pid 1).
  const apps = `${b.child.pid}:0,${a.child.pid}:1,${b.child.pid}:2,1:3`;
  meter = new InfermeterProcess(
    ['--config', config, '--listen', '127.0.0.1:0', '--metrics-listen', '127.0.0.1:0', '--no-collector.engine', '--no-collector.host',
      '--nvidia-smi', FAKE_NVIDIA_SMI, '--engine-interval', '500ms'],
    { FAKE_NVIDIA_SMI_GPUS: '4', FAKE_NVIDIA_SMI_PERIOD_MS: '200', FAKE_NVIDIA_SMI_COMPUTE_APPS: apps },
  );
  await meter.start();
  const samples = await waitForMetrics(`${meter.metricsUrl}/metrics`, (s) => s.filter((x) => x.name === 'infermeter_gpu_engine_info').length >= 3 && s.filter((x) => x.name === 'infermeter_gpu_info').length === 4, 10_000);
  const uuid = new Map(samples.filter((s) => s.name === 'infermeter_gpu_info').map((s) => [s.labels['gpu'], s.labels['uuid']]));
  const rows = samples.filter((s) => s.name === 'infermeter_gpu_engine_info').map((s) => `${s.labels['gpu']}:${s.labels['upstream']}:${s.labels['uuid'] === uuid.get(s.labels['gpu']!)}`).sort();
  assert.deepEqual(rows, ['0:b:true', '1:a:true', '2:b:true'], 'GPU 3 (another process) is tied to no upstream');
});
