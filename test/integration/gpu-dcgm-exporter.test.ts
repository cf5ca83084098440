/**
 * dcgm-exporter as the GPU source, through the flags, the collector table and the runner,
 * against a fake dcgm-exporter (a real HTTP server on 127.0.0.1): the same infermeter_gpu_*
 * series as nvidia-smi gives; a dead exporter sets collector_up to 0 and removes the series;
 * promtool stays clean.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { Command } from 'commander';
import { Registry } from 'prom-client';
import { addConfigOptions, resolveConfig } from '../../src/config.js';
import { ConfigError } from '../../src/lib/errors.js';
import { CollectorRunner } from '../../src/collectors/runner.js';
import { COLLECTORS } from '../../src/collectors/index.js';
import { capturedLogger, eventually, fixturePath, scrape, series } from '../fakes/gpu.js';
import { startFakeDcgmExporter } from '../fakes/dcgm-exporter.js';
import { skipWithout } from '../helpers/tools.js';

const SCRAPE = readFileSync(fixturePath('dcgm-exporter-scrape-synthetic-2gpu-h100.prom'), 'utf8');

function configFor(argv: string[]) {
  const cmd = addConfigOptions(new Command('serve')).exitOverride();
  cmd.parse(['--upstream', 'http://127.0.0.1:9', '--gpu-interval', '1s', '--no-collector.engine', '--no-collector.host', ...argv], { from: 'user' });
  return resolveConfig(cmd.opts(), {});
}

function runnerFor(argv: string[], edit: (c: ReturnType<typeof configFor>) => void = () => undefined) {
  const config = configFor(argv);
  edit(config);
  const registry = new Registry();
  const { log, lines } = capturedLogger();
  const runner = new CollectorRunner(registry, config, log);
  runner.start(COLLECTORS.filter((c) => c.name === 'gpu'));
  const up = async () => series(await scrape(registry), 'infermeter_collector_up').find((x) => x.labels['collector'] === 'gpu')?.value;
  return { config, registry, lines, runner, up };
}

test('--gpu-source dcgm-exporter: the same gauges and labels as nvidia-smi; a dead exporter: up=0, series gone; back again: up=1', async () => {
  const exporter = await startFakeDcgmExporter(SCRAPE);
  const { registry, runner, up, lines } = runnerFor(['--gpu-source', 'dcgm-exporter', '--dcgm-exporter-url', exporter.url]);
  let port = Number(new URL(exporter.url).port);
  let second: Awaited<ReturnType<typeof startFakeDcgmExporter>> | null = null;
  try {
    await eventually(async () => (await up()) === 1, 8000, 'gpu collector up');
    const s = await scrape(registry);
    assert.deepEqual(series(s, 'infermeter_gpu_sm_occupancy_ratio').map((x) => [x.labels, x.value]), [
      [{ gpu: '0', uuid: 'GPU-5e2a9c41-7b3d-4f0e-9a61-2c8d0b7e13f4' }, 0.38],
      [{ gpu: '1', uuid: 'GPU-b07f3e12-58ac-4d29-8e6b-91c4fa3d2075' }, 0.36],
    ]);
    assert.equal(series(s, 'infermeter_gpu_dram_bandwidth_utilization_ratio')[0]!.value, 0.84);
    assert.equal(series(s, 'infermeter_gpu_power_watts')[1]!.value, 388);
    assert.equal(series(s, 'infermeter_gpu_info')[0]!.labels['name'], 'NVIDIA H100 80GB HBM3');
    assert.deepEqual(series(s, 'infermeter_gpu_source_info').map((x) => x.labels), [{ source: 'dcgm-exporter', gpm: 'enabled', reason: '' }]);
    assert.ok(lines.some((l) => l['msg'] === 'GPU source' && l['source'] === 'dcgm-exporter'));

    await exporter.close();
    await eventually(async () => (await up()) === 0, 8000, 'gpu collector down');
    const after = await scrape(registry);
    assert.equal(series(after, 'infermeter_gpu_power_watts').length, 0, 'no frozen values');
    assert.ok(series(after, 'infermeter_collector_errors_total').some((x) => x.labels['collector'] === 'gpu' && x.labels['kind'] === 'unreachable'));

    second = await startFakeDcgmExporter(SCRAPE, port);
    await eventually(async () => (await up()) === 1 && series(await scrape(registry), 'infermeter_gpu_power_watts').length === 2, 8000, 'back up');
    port = 0;
  } finally {
    await runner.close();
    await second?.close();
    if (port) await exporter.close().catch(() => undefined);
  }
});

test('--gpu-source dcgm-exporter: the driver\'s energy counter (DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, mJ) is used as is, whatever the power reads', async () => {
  const exporter = await startFakeDcgmExporter(SCRAPE);
  const { registry, runner, up } = runnerFor(['--gpu-source', 'dcgm-exporter', '--dcgm-exporter-url', exporter.url]);
  const energy = async () => Object.fromEntries(series(await scrape(registry), 'infermeter_gpu_energy_joules_total').map((x) => [x.labels['gpu'], x.value]));
  try {
    await eventually(async () => (await up()) === 1 && Object.keys(await energy()).length === 2, 8000, 'gpu collector up with both energy series');
    assert.deepEqual(await energy(), { 0: 0, 1: 0 }, 'counted from the first reading');
    // GPU 0's counter rises by 5 000 000 mJ, GPU 1's by 1234 mJ: 5000 J and 1.234 J (to a double's rounding at 9e8 J), though both draw hundreds of watts.
    exporter.body = SCRAPE.replace(' 912837465123', ' 912842465123').replace(' 887120033417', ' 887120034651');
    await eventually(async () => (await energy())['0'] === 5000, 8000, 'GPU 0 at 5000 J');
    assert.ok(Math.abs((await energy())['1']! - 1.234) < 1e-6, JSON.stringify(await energy()));
  } finally {
    await runner.close();
    await exporter.close();
  }
});

test('--gpu-source auto without nvidia-smi on PATH and a --dcgm-exporter-url: dcgm-exporter is scraped', async () => {
  const exporter = await startFakeDcgmExporter(SCRAPE);
  const { config, runner, up } = runnerFor(['--nvidia-smi', '/nonexistent/nvidia-smi', '--dcgm-exporter-url', exporter.url]);
  try {
    assert.equal(config.gpuSource, 'auto');
    await eventually(async () => (await up()) === 1, 8000, 'gpu collector up from dcgm-exporter');
    assert.ok(exporter.scrapes >= 1);
  } finally {
    await runner.close();
    await exporter.close();
  }
});

test('--gpu-source dcgm-exporter without a URL stops startup naming --dcgm-exporter-url; a collector left without one is down (not_configured)', async () => {
  assert.throws(() => configFor(['--gpu-source', 'dcgm-exporter']), (e: unknown) => e instanceof ConfigError && e.flag === '--dcgm-exporter-url');
  // Defence in depth: the collector itself never scrapes nothing.
  const { registry, runner } = runnerFor(['--gpu-source', 'dcgm-exporter', '--dcgm-exporter-url', 'http://127.0.0.1:9/metrics'], (c) => (c.dcgmExporterUrl = ''));
  try {
    await eventually(async () => series(await scrape(registry), 'infermeter_collector_errors_total').some((x) => x.labels['kind'] === 'not_configured'), 5000, 'not_configured');
  } finally {
    await runner.close();
  }
});

test('promtool check metrics: the dcgm-exporter source lints clean', { skip: skipWithout(spawnSync('promtool', ['--version']).status === 0, 'promtool not installed') }, async () => {
  const exporter = await startFakeDcgmExporter(SCRAPE);
  const { registry, runner, up } = runnerFor(['--gpu-source', 'dcgm-exporter', '--dcgm-exporter-url', exporter.url]);
  try {
    await eventually(async () => (await up()) === 1, 8000, 'gpu collector up');
    const r = spawnSync('promtool', ['check', 'metrics'], { input: await registry.metrics(), encoding: 'utf8' });
    assert.equal(r.status, 0, `promtool: ${r.stdout}${r.stderr}`);
  } finally {
    await runner.close();
    await exporter.close();
  }
});
