/** `--nvidia-smi <path>` pointed at the shipped fake: the daemon's collector table and runner pick it up. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Command } from 'commander';
import { Registry } from 'prom-client';
import { addConfigOptions, resolveConfig } from '../../src/config.js';
import { CollectorRunner } from '../../src/collectors/runner.js';
import { COLLECTORS } from '../../src/collectors/index.js';
import { FAKE_NVIDIA_SMI, capturedLogger, eventually, scrape, series } from '../fakes/gpu.js';

function configFrom(argv: string[]) {
  const cmd = addConfigOptions(new Command('serve')).exitOverride();
  cmd.parse(argv, { from: 'user' });
  return resolveConfig(cmd.opts(), {});
}

test('--nvidia-smi bin/fake-nvidia-smi: GPU metrics and collector_up=1 through the runner', async () => {
  process.env['FAKE_NVIDIA_SMI_GPUS'] = '2';
  process.env['FAKE_NVIDIA_SMI_MODEL'] = 'NVIDIA L4';
  const config = configFrom(['--upstream', 'http://127.0.0.1:9', '--nvidia-smi', FAKE_NVIDIA_SMI, '--gpu-interval', '1s', '--no-collector.engine', '--no-collector.host']);
  assert.equal(config.nvidiaSmi, FAKE_NVIDIA_SMI);
  const registry = new Registry();
  const { log } = capturedLogger();
  const runner = new CollectorRunner(registry, config, log);
  runner.start(COLLECTORS.filter((c) => c.name === 'gpu'));
  try {
    await eventually(async () => {
      const s = await scrape(registry);
      return series(s, 'infermeter_collector_up').some((x) => x.labels['collector'] === 'gpu' && x.value === 1)
        && series(s, 'infermeter_gpu_info').length === 2;
    }, 10000, 'gpu collector up with 2 GPUs');
    const s = await scrape(registry);
    assert.deepEqual(series(s, 'infermeter_gpu_info').map((x) => x.labels['name']), ['NVIDIA L4', 'NVIDIA L4']);
    assert.equal(series(s, 'infermeter_gpu_power_watts').length, 2);
  } finally {
    await runner.close();
  }
});

test('--nvidia-smi pointing nowhere: collector_up=0, errors_total{kind="not_found"}, the runner goes on', async () => {
  const config = configFrom(['--upstream', 'http://127.0.0.1:9', '--nvidia-smi', '/nonexistent/nvidia-smi']);
  const registry = new Registry();
  const { log, lines } = capturedLogger();
  const runner = new CollectorRunner(registry, config, log);
  runner.start(COLLECTORS.filter((c) => c.name === 'gpu'));
  try {
    await eventually(async () => series(await scrape(registry), 'infermeter_collector_errors_total')
      .some((x) => x.labels['kind'] === 'not_found'), 5000, 'not_found error counted');
    const up = series(await scrape(registry), 'infermeter_collector_up').find((x) => x.labels['collector'] === 'gpu');
    assert.equal(up?.value, 0);
    // The cause, not a symptom of it: the binary is missing, not merely its `dmon -h` failing.
    assert.deepEqual(series(await scrape(registry), 'infermeter_gpu_source_info').map((x) => x.labels), [{ source: 'nvidia-smi', gpm: 'unavailable', reason: 'not_found' }]);
    assert.equal(lines.filter((l) => l['msg'] === 'collector failed; will keep trying').length, 1);
  } finally {
    await runner.close();
  }
});
