/**
 * GPM through the collector and the fake nvidia-smi as a real process: on a Hopper board the
 * GPM gauges appear; where GPM is missing (a board without it, a driver without the option,
 * a driver that rejects it) dmon runs again without it, the state is logged once and shown
 * in infermeter_gpu_source_info, and the collector stays up.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Registry } from 'prom-client';
import { GpuCollector } from '../../src/collectors/gpu/collector.js';
import { parseDmonText } from '../../src/collectors/gpu/dmon.js';
import { FAKE_NVIDIA_SMI, capturedLogger, eventually, fixturePath, scrape, series } from '../fakes/gpu.js';

const GPM = ['infermeter_gpu_sm_active_ratio', 'infermeter_gpu_sm_occupancy_ratio', 'infermeter_gpu_tensor_active_ratio', 'infermeter_gpu_dram_bandwidth_utilization_ratio'];
const GPM_LOG = /GPU Performance Monitoring .* not available/;

function start(env: Record<string, string>) {
  const registry = new Registry();
  const { log, lines } = capturedLogger();
  const collector = new GpuCollector({
    binary: FAKE_NVIDIA_SMI, columns: 'pucvmet', intervalSeconds: 1, sampleMs: 100, factsRetryMs: 200, backoffBaseMs: 50,
    env: { ...process.env, FAKE_NVIDIA_SMI_PERIOD_MS: '50', FAKE_NVIDIA_SMI_GPUS: '2', ...env },
  }, registry, log);
  const collect = async () => {
    try {
      await collector.collect(new AbortController().signal);
      return null;
    } catch (err) {
      return err as Error;
    }
  };
  return { collector, registry, lines, collect };
}

const info = async (registry: Registry) => series(await scrape(registry), 'infermeter_gpu_source_info').map((s) => s.labels);

test('Hopper board (H100, driver 550): GPM gauges in 0-1 and NVLink rates, gpm="enabled", --gpm-options d passed', async () => {
  const { collector, registry, lines, collect } = start({ FAKE_NVIDIA_SMI_LOAD: '0.6' });
  try {
    await eventually(async () => (await collect()) === null && series(await scrape(registry), GPM[3]!).length === 2, 8000, 'GPM series for 2 GPUs');
    const s = await scrape(registry);
    for (const m of GPM) {
      for (const x of series(s, m)) assert.ok(x.value > 0 && x.value <= 1, `${m}=${x.value}`);
    }
    assert.equal(series(s, 'infermeter_gpu_nvlink_receive_bytes_per_second').length, 2);
    assert.deepEqual(await info(registry), [{ source: 'nvidia-smi', gpm: 'enabled', reason: '' }]);
    assert.deepEqual(collector.dmonCommands[0]!.slice(7), ['--gpm-metrics', '2,3,5,10,20,21,60,61', '--gpm-options', 'd']);
    assert.equal(lines.filter((l) => GPM_LOG.test(String(l['msg']))).length, 0);
  } finally {
    await collector.close();
  }
});

for (const [what, env, reason] of [
  ['a board without GPM (L4: columns stay "-")', { FAKE_NVIDIA_SMI_MODEL: 'NVIDIA L4' }, 'no_values'],
  ['a driver whose dmon has no --gpm-metrics (525)', { FAKE_NVIDIA_SMI_DRIVER: '525.147.05' }, 'not_in_help'],
  ['a driver that rejects --gpm-metrics when run', { FAKE_NVIDIA_SMI_GPM_REJECT: '1' }, 'rejected'],
] as const) {
  test(`${what}: dmon runs without GPM, logged once, gpm="unavailable", collector up`, async () => {
    const { collector, registry, lines, collect } = start(env);
    try {
      await eventually(async () => (await collect(), (await info(registry))[0]?.['gpm'] === 'unavailable') && !collector.dmonCommands[0]!.includes('--gpm-metrics'), 8000, 'fallback');
      // The samples of the dmon that asked for GPM go stale in 3 intervals (300 ms); past that, every sample is the new dmon's.
      await new Promise((r) => setTimeout(r, 400));
      await eventually(async () => (await collect()) === null && series(await scrape(registry), 'infermeter_gpu_power_watts').length === 2, 8000, 'samples from dmon without GPM');
      assert.deepEqual(await info(registry), [{ source: 'nvidia-smi', gpm: 'unavailable', reason }]);
      assert.ok(!collector.dmonCommands[0]!.includes('--gpm-metrics'), collector.dmonCommands[0]!.join(' '));
      await new Promise((r) => setTimeout(r, 400)); // several more samples: still one log line, still up
      assert.equal(await collect(), null);
      const s = await scrape(registry);
      for (const m of GPM) assert.equal(series(s, m).length, 0, m);
      assert.equal(series(s, 'infermeter_gpu_sm_utilization_ratio').length, 2);
      assert.equal(lines.filter((l) => GPM_LOG.test(String(l['msg']))).length, 1);
      assert.equal(lines.filter((l) => l['reason'] === reason).length, 1);
    } finally {
      await collector.close();
    }
  });
}

test('replaying the published GPM capture: "-" rows publish no GPM series, later rows the captured ratios', async () => {
  const file = fixturePath('nvidia-smi-dmon-gpm-metrics-1-2-13-1gpu.txt');
  const captured = parseDmonText(readFileSync(file, 'utf8')).samples.map((x) => x.values.get('infermeter_gpu_sm_active_ratio'));
  assert.deepEqual(captured, [null, null, 0.01, 0.08]);
  const { collector, registry, collect } = start({ FAKE_NVIDIA_SMI_REPLAY: file, FAKE_NVIDIA_SMI_GPUS: '1' });
  try {
    const seen = new Set<number | 'none'>();
    await eventually(async () => {
      await collect();
      const got = series(await scrape(registry), 'infermeter_gpu_sm_active_ratio');
      seen.add(got[0]?.value ?? 'none');
      return seen.has('none') && seen.has(0.01) && seen.has(0.08);
    }, 8000, 'both "-" and values seen');
    assert.deepEqual([...seen].filter((v) => v !== 'none').sort(), [0.01, 0.08]);
    assert.equal((await info(registry))[0]?.['gpm'], 'enabled');
  } finally {
    await collector.close();
  }
});
