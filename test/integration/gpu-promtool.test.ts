/** The GPU families, as rendered from a live collector with every column, pass `promtool check metrics`. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { Registry } from 'prom-client';
import { GpuCollector } from '../../src/collectors/gpu/collector.js';
import { FAKE_NVIDIA_SMI, capturedLogger, eventually, scrape, series } from '../fakes/gpu.js';
import { skipWithout } from '../helpers/tools.js';

const hasPromtool = spawnSync('promtool', ['--version']).status === 0;

test('promtool check metrics: GPU metrics lint clean', { skip: skipWithout(hasPromtool, 'promtool not installed (Debian package prometheus)') }, async () => {
  const registry = new Registry();
  const collector = new GpuCollector({
    binary: FAKE_NVIDIA_SMI, columns: 'pucvmet', intervalSeconds: 1, sampleMs: 100, factsRetryMs: 100,
    env: { ...process.env, FAKE_NVIDIA_SMI_PERIOD_MS: '100', FAKE_NVIDIA_SMI_GPUS: '4', FAKE_NVIDIA_SMI_FAULT: 'garbage', FAKE_NVIDIA_SMI_LOAD: '0.5' },
  }, registry, capturedLogger().log);
  try {
    await eventually(async () => {
      await collector.collect(new AbortController().signal).catch(() => {});
      const s = await scrape(registry);
      return series(s, 'infermeter_gpu_info').length === 4 && series(s, 'infermeter_gpu_dmon_invalid_lines_total')[0]!.value > 0
        && series(s, 'infermeter_gpu_nvlink_transmit_bytes_per_second').length === 4;
    }, 8000, '4 GPUs with info and GPM');
    const text = await registry.metrics();
    assert.match(text, /infermeter_gpu_pcie_transmit_bytes_per_second\{gpu="3",uuid="GPU-/);
    assert.match(text, /infermeter_gpu_sm_occupancy_ratio\{gpu="3",uuid="GPU-/);
    assert.match(text, /infermeter_gpu_source_info\{source="nvidia-smi",gpm="enabled",reason=""\} 1/);
    const r = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
    assert.equal(r.status, 0, `promtool: ${r.stdout}${r.stderr}`);
  } finally {
    await collector.close();
  }
});
