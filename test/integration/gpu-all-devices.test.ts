/**
 * Every GPU of the node: 535-series drivers show 4 GPUs in dmon unless NVSMI_SHOW_ALL_DEVICES=1
 * (the fake behaves so), the collector sets it itself, and past 16 GPUs runs one dmon per group.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { GpuCollector } from '../../src/collectors/gpu/collector.js';
import { parseDmonText } from '../../src/collectors/gpu/dmon.js';
import { FAKE_NVIDIA_SMI, capturedLogger, eventually, runFake, scrape, series } from '../fakes/gpu.js';

const DRIVER_535 = { FAKE_NVIDIA_SMI_DRIVER: '535.183.01', FAKE_NVIDIA_SMI_PERIOD_MS: '5' };

/** The environment as a user's shell has it: without the variable. */
function envWithout(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env = { ...process.env, ...extra };
  delete env['NVSMI_SHOW_ALL_DEVICES'];
  return env;
}

test('fake 535 driver, 8 GPUs: 4 GPUs and the warning without NVSMI_SHOW_ALL_DEVICES, all 8 with it; newer drivers all 8', async () => {
  const without = await runFake(['dmon', '-c', '2'], { ...DRIVER_535, FAKE_NVIDIA_SMI_GPUS: '8', NVSMI_SHOW_ALL_DEVICES: '' });
  const a = parseDmonText(without.stdout);
  assert.deepEqual([...new Set(a.samples.map((s) => s.gpu))], [0, 1, 2, 3]);
  assert.deepEqual(a.warnings, ['WARNING: Only monitoring up to 4 GPUs is supported by default. Set NVSMI_SHOW_ALL_DEVICES=1 to increase the limit up to 16 GPUs.']);
  assert.equal(a.invalidLines, 0);
  const withVar = parseDmonText((await runFake(['dmon', '-c', '2'], { ...DRIVER_535, FAKE_NVIDIA_SMI_GPUS: '8', NVSMI_SHOW_ALL_DEVICES: '1' })).stdout);
  assert.equal(new Set(withVar.samples.map((s) => s.gpu)).size, 8);
  assert.deepEqual(withVar.warnings, []);
  const newer = parseDmonText((await runFake(['dmon', '-c', '2'], { FAKE_NVIDIA_SMI_PERIOD_MS: '5', FAKE_NVIDIA_SMI_GPUS: '8', NVSMI_SHOW_ALL_DEVICES: '' })).stdout);
  assert.equal(new Set(newer.samples.map((s) => s.gpu)).size, 8);
  const twenty = parseDmonText((await runFake(['dmon', '-c', '1'], { FAKE_NVIDIA_SMI_PERIOD_MS: '5', FAKE_NVIDIA_SMI_GPUS: '20' })).stdout);
  assert.equal(twenty.samples.length, 16, 'dmon monitors at most 16 devices');
});

async function collectGpus(env: NodeJS.ProcessEnv, want: number) {
  const registry = new Registry();
  const { log, lines } = capturedLogger();
  const collector = new GpuCollector({ binary: FAKE_NVIDIA_SMI, columns: 'pucvmet', intervalSeconds: 1, sampleMs: 100, factsRetryMs: 200, env }, registry, log);
  try {
    await eventually(async () => {
      await collector.collect(new AbortController().signal).catch(() => undefined);
      return series(await scrape(registry), 'infermeter_gpu_power_watts').length === want;
    }, 10_000, `${want} GPUs exported`);
    const s = await scrape(registry);
    return { s, lines, commands: collector.dmonCommands };
  } finally {
    await collector.close();
  }
}

test('an 8-GPU node on a 535 driver, NVSMI_SHOW_ALL_DEVICES not set by hand: all 8 GPUs exported, no invalid line', async () => {
  const { s, commands } = await collectGpus(envWithout({ ...DRIVER_535, FAKE_NVIDIA_SMI_PERIOD_MS: '100', FAKE_NVIDIA_SMI_GPUS: '8' }), 8);
  assert.deepEqual(series(s, 'infermeter_gpu_power_watts').map((x) => x.labels['gpu']), ['0', '1', '2', '3', '4', '5', '6', '7']);
  assert.equal(series(s, 'infermeter_gpu_info').length, 8);
  assert.equal(series(s, 'infermeter_gpu_dmon_invalid_lines_total')[0]?.value ?? 0, 0);
  assert.equal(commands.length, 1);
});

test('20 GPUs: two dmon children (-i 0..15 and 16..19), all 20 exported', async () => {
  const { s, commands } = await collectGpus(envWithout({ FAKE_NVIDIA_SMI_PERIOD_MS: '100', FAKE_NVIDIA_SMI_GPUS: '20' }), 20);
  assert.deepEqual(commands.map((c) => c.at(-1)), [Array.from({ length: 16 }, (_, i) => i).join(','), '16,17,18,19']);
  assert.equal(new Set(series(s, 'infermeter_gpu_power_watts').map((x) => x.labels['uuid'])).size, 20);
});
