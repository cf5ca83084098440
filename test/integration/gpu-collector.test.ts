/** The GPU collector against the fake nvidia-smi, run as a real process: replay, faults, restarts, missing binary. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { GpuCollector, type GpuCollectorOptions } from '../../src/collectors/gpu/collector.js';
import { parseDmonText } from '../../src/collectors/gpu/dmon.js';
import { CollectorError } from '../../src/collectors/types.js';
import { uuid } from '../../src/sim/gpu/fake-nvidia-smi.js';
import { DMON_FIXTURES, FAKE_NVIDIA_SMI, capturedLogger, eventually, fixturePath, scrape, series } from '../fakes/gpu.js';

const POWER = 'infermeter_gpu_power_watts';

function start(env: Record<string, string>, opts: Partial<GpuCollectorOptions> = {}) {
  const registry = new Registry();
  const { log, lines } = capturedLogger();
  const collector = new GpuCollector({
    binary: FAKE_NVIDIA_SMI, columns: 'pucvmet', intervalSeconds: 1, sampleMs: 100, backoffBaseMs: 50, backoffMaxMs: 400,
    startupGraceMs: 5000, factsRetryMs: 200, env: { ...process.env, FAKE_NVIDIA_SMI_PERIOD_MS: '100', ...env }, ...opts,
  }, registry, log);
  return { collector, registry, lines };
}

/** One collect(): null when it succeeded, else the CollectorError (anything else fails the test). */
async function collectOnce(c: GpuCollector): Promise<CollectorError | null> {
  try {
    await c.collect(new AbortController().signal);
    return null;
  } catch (err) {
    assert.ok(err instanceof CollectorError, `collect() threw a non-CollectorError: ${String(err)}`);
    return err;
  }
}

async function seriesOf(c: GpuCollector, registry: Registry, name: string) {
  await collectOnce(c);
  return series(await scrape(registry), name);
}

for (const file of DMON_FIXTURES) {
  test(`replaying ${file}: every value published is one the capture holds, in base units`, async () => {
    const { collector, registry } = start({ FAKE_NVIDIA_SMI_REPLAY: fixturePath(file) });
    try {
      const captured = parseDmonText(readFileSync(fixturePath(file), 'utf8')).samples;
      const metrics = [...captured[0]!.values.keys()];
      const info = () => seriesOf(collector, registry, 'infermeter_gpu_info');
      await eventually(async () => (await info()).length === 1, 8000, 'gpu info');
      const samples = await scrape(registry);
      assert.deepEqual(series(samples, 'infermeter_gpu_info')[0]!.labels,
        { gpu: '0', uuid: uuid(1, 0), name: 'NVIDIA H100 80GB HBM3', driver_version: '550.127.05', pci_bus_id: '00000000:18:00.0' });
      for (const m of metrics) {
        const got = series(samples, m);
        const allowed = captured.map((s) => s.values.get(m));
        if (allowed.every((v) => v === null)) {
          assert.equal(got.length, 0, `${m}: no value in the capture, so no series`);
          continue;
        }
        // A metric with "-" in some rows (GPM before its second sample) has no series while one of those is current.
        if (allowed.includes(null) && got.length === 0) continue;
        assert.equal(got.length, 1, m);
        assert.deepEqual(got[0]!.labels, { gpu: '0', uuid: uuid(1, 0) });
        assert.ok(allowed.includes(got[0]!.value), `${m}=${got[0]!.value} not in capture ${allowed.join(',')}`);
      }
      assert.equal(series(samples, 'infermeter_gpu_memory_total_bytes')[0]!.value, 81559 * 1024 * 1024);
    } finally {
      await collector.close();
    }
  });
}

test('header change mid-stream: the new column set is followed, vanished columns lose their series', async () => {
  const { collector, registry } = start({ FAKE_NVIDIA_SMI_FAULT: 'header-change', FAKE_NVIDIA_SMI_FAULT_AFTER: '3', FAKE_NVIDIA_SMI_FAULT_COLUMNS: 'm' });
  try {
    await eventually(async () => (await seriesOf(collector, registry, POWER)).length === 1, 8000, 'power series');
    await eventually(async () => (await seriesOf(collector, registry, POWER)).length === 0, 8000, 'power series to go');
    assert.equal((await seriesOf(collector, registry, 'infermeter_gpu_memory_used_bytes')).length, 1);
    assert.equal(await collectOnce(collector), null);
  } finally {
    await collector.close();
  }
});

test('garbage lines: skipped and counted, samples still published, no restart', async () => {
  const { collector, registry } = start({ FAKE_NVIDIA_SMI_FAULT: 'garbage', FAKE_NVIDIA_SMI_FAULT_AFTER: '1' });
  try {
    await eventually(async () => ((await seriesOf(collector, registry, 'infermeter_gpu_dmon_invalid_lines_total'))[0]?.value ?? 0) >= 3, 8000, 'invalid lines');
    const samples = await scrape(registry);
    assert.equal(series(samples, POWER).length, 1);
    assert.equal(series(samples, 'infermeter_gpu_dmon_restarts_total').length, 0);
  } finally {
    await collector.close();
  }
});

test('hung nvidia-smi: series disappear, collect reports stale, the child is killed and restarted', async () => {
  const { collector, registry, lines } = start({ FAKE_NVIDIA_SMI_FAULT: 'hang', FAKE_NVIDIA_SMI_FAULT_AFTER: '3' });
  try {
    await eventually(async () => (await seriesOf(collector, registry, POWER)).length === 1, 8000, 'power series');
    let stale: CollectorError | null = null;
    await eventually(async () => (stale = await collectOnce(collector)) !== null, 8000, 'collect to fail');
    assert.equal(stale!.kind, 'stale');
    assert.equal(series(await scrape(registry), POWER).length, 0, 'no frozen values');
    await eventually(() => lines.some((l) => l['reason'] === 'stalled'), 8000, 'a stalled restart');
    await eventually(async () => (await seriesOf(collector, registry, POWER)).length === 1, 8000, 'series back after restart');
    const restarts = series(await scrape(registry), 'infermeter_gpu_dmon_restarts_total');
    assert.ok(restarts.some((s) => s.labels['reason'] === 'stalled' && s.value >= 1));
  } finally {
    await collector.close();
  }
});

test('crashing nvidia-smi: restarted with exponential backoff, capped', async () => {
  const { collector, lines } = start({ FAKE_NVIDIA_SMI_FAULT: 'crash', FAKE_NVIDIA_SMI_FAULT_AFTER: '1' }, { backoffBaseMs: 20, backoffMaxMs: 80 });
  try {
    await collectOnce(collector);
    const restarts = () => lines.filter((l) => l['msg'] === 'nvidia-smi dmon ended; restarting after backoff');
    await eventually(() => restarts().length >= 4, 15000, '4 restarts');
    const first = restarts().slice(0, 4);
    assert.deepEqual(first.map((l) => l['delayMs']), [20, 40, 80, 80]);
    assert.ok(first.every((l) => l['reason'] === 'exited' && /GPU is lost/.test(String(l['exit']))));
  } finally {
    await collector.close();
  }
});

test('a GPU that stops reporting disappears from /metrics; the others stay', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gpu-'));
  const file = join(dir, 'two-then-one.txt');
  const head = '# gpu    pwr     sm\n# Idx      W      %\n';
  writeFileSync(file, head + '    0    100     50\n    1    200     60\n'.repeat(3) + '    0    100     50\n'.repeat(200));
  const { collector, registry } = start({ FAKE_NVIDIA_SMI_REPLAY: file, FAKE_NVIDIA_SMI_GPUS: '2', FAKE_NVIDIA_SMI_PERIOD_MS: '50' }, { sampleMs: 100 });
  try {
    await eventually(async () => (await seriesOf(collector, registry, POWER)).length === 2, 8000, 'two GPUs');
    await eventually(async () => (await seriesOf(collector, registry, POWER)).length === 1, 8000, 'GPU 1 to go');
    const samples = await scrape(registry);
    assert.deepEqual(series(samples, POWER).map((s) => s.labels['gpu']), ['0']);
    assert.deepEqual(series(samples, 'infermeter_gpu_info').map((s) => s.labels['gpu']), ['0']);
    assert.equal(await collectOnce(collector), null);
  } finally {
    await collector.close();
  }
});

test('no nvidia-smi binary: collect reports not_found (a CollectorError) and keeps doing so; nothing else breaks', async () => {
  const { collector, registry, lines } = start({}, { binary: '/nonexistent/bin/nvidia-smi' });
  try {
    for (let i = 0; i < 3; i++) {
      const err = await collectOnce(collector);
      assert.equal(err?.kind, 'not_found');
      await new Promise((r) => setTimeout(r, 60));
    }
    const restarts = series(await scrape(registry), 'infermeter_gpu_dmon_restarts_total');
    assert.ok(restarts.some((s) => s.labels['reason'] === 'spawn_failed'));
    assert.equal(lines.filter((l) => (l['level'] as number) >= 40).length, 0, 'the runner, not the collector, logs the failure');
  } finally {
    await collector.close();
  }
});
