/**
 * The runner's machine snapshot against /metrics, through real processes and sockets: the
 * fake nvidia-smi (2 GPUs), a fake engine serving a captured vLLM scrape, and the host.
 * Every figure the snapshot holds is the one its series shows (one measurement feeds both),
 * collector health included; an engine that goes down leaves both at once, and comes back.
 */
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { Registry } from 'prom-client';
import { addConfigOptions, resolveConfig } from '../../src/config.js';
import { CollectorRunner } from '../../src/collectors/runner.js';
import { COLLECTORS } from '../../src/collectors/index.js';
import { GPU_FIELDS, type GpuField } from '../../src/collectors/gpu/fields.js';
import { ENGINE_FIELDS, type EngineField } from '../../src/collectors/engine/fields.js';
import type { MachineState } from '../../src/collectors/snapshot.js';
import { createLogger } from '../../src/lib/log.js';
import { parsePrometheusText, type Sample } from '../../src/lib/prom-text.js';
import { FAKE_NVIDIA_SMI, eventually } from '../fakes/gpu.js';
import { startFakeEngine, type FakeEngine } from '../fakes/engine-metrics-server.js';

const fixture = (name: string) => readFileSync(new URL(`../../../test/fixtures/${name}`, import.meta.url), 'utf8');

let fake: FakeEngine;
let registry: Registry;
let runner: CollectorRunner;

before(async () => {
  fake = await startFakeEngine({ body: fixture('vllm-v0-metrics-0.10-cpu-full.prom') });
  process.env['FAKE_NVIDIA_SMI_GPUS'] = '2';
  process.env['FAKE_NVIDIA_SMI_MODEL'] = 'NVIDIA L4';
  const cmd = addConfigOptions(new Command('serve')).exitOverride();
  cmd.parse(['--upstream', 'http://127.0.0.1:9', '--engine', 'vllm', '--engine-metrics', fake.url, '--engine-interval', '250ms', '--host-interval', '500ms',
    '--nvidia-smi', FAKE_NVIDIA_SMI, '--gpu-interval', '1s'], { from: 'user' });
  registry = new Registry();
  runner = new CollectorRunner(registry, resolveConfig(cmd.opts(), {}), createLogger('silent'));
  runner.start(COLLECTORS);
});

after(async () => {
  await runner.close();
  await fake.close();
});

/** The snapshot and the series, read with nothing in between but microtasks. */
async function both(): Promise<{ m: MachineState; s: Sample[] }> {
  const m = runner.machine.read();
  return { m, s: parsePrometheusText(await registry.metrics()).samples };
}

const value = (s: Sample[], name: string, labels: Record<string, string>) => {
  const found = s.filter((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v));
  assert.ok(found.length <= 1, `${name} ${JSON.stringify(labels)}: one series at most`);
  return found[0]?.value ?? null;
};

/** Where the snapshot and /metrics disagree (empty: they agree). */
function differences({ m, s }: { m: MachineState; s: Sample[] }): string[] {
  const out: string[] = [];
  const same = (what: string, a: number | null, b: number | null) => {
    if (!(a === b || (a !== null && b !== null && Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(b))))) out.push(`${what}: snapshot ${a}, /metrics ${b}`);
  };
  for (const g of m.gpus) {
    for (const [field, metric] of Object.entries(GPU_FIELDS) as [GpuField, string][]) same(`gpu ${g.index} ${field}`, g[field], value(s, metric, { gpu: String(g.index), uuid: g.uuid }));
    same(`gpu ${g.index} memoryTotalBytes`, g.memoryTotalBytes, value(s, 'infermeter_gpu_memory_total_bytes', { gpu: String(g.index) }));
  }
  same('GPUs', m.gpus.length, new Set(s.filter((x) => x.name === GPU_FIELDS.powerWatts).map((x) => x.labels['gpu'])).size);
  for (const e of m.engines) {
    for (const [field, metric] of Object.entries(ENGINE_FIELDS) as [EngineField, string][]) same(`engine ${e.upstream} ${field}`, e[field], value(s, metric, { upstream: e.upstream }));
    same(`engine ${e.upstream} ttft count`, e.histograms.timeToFirstToken?.count ?? null, value(s, 'infermeter_engine_time_to_first_token_seconds_count', { upstream: e.upstream }));
  }
  for (const h of m.collectors) {
    const labels: Record<string, string> = h.upstream === null ? { collector: h.collector } : { collector: h.collector, upstream: h.upstream };
    same(`${h.collector} up`, h.up ? 1 : 0, value(s, 'infermeter_collector_up', labels));
    same(`${h.collector} last success`, h.lastSuccessAt === null ? null : h.lastSuccessAt / 1000, value(s, 'infermeter_collector_last_success_timestamp_seconds', labels));
    same(`${h.collector} duration`, h.durationSeconds, value(s, 'infermeter_collector_duration_seconds', labels));
  }
  same('host cpu', m.host?.cpuUtilization ?? null, value(s, 'infermeter_host_cpu_utilization_ratio', {}));
  same('host memory used', m.host?.memoryUsedBytes ?? null, value(s, 'infermeter_host_memory_used_bytes', {}));
  same('process cpu seconds', m.process?.cpuSecondsTotal ?? null, value(s, 'infermeter_process_cpu_seconds_total', {}));
  return out;
}

test('every figure of the snapshot is the one /metrics shows: GPUs, the engine, the host and each collector\'s health', async () => {
  await eventually(async () => {
    const now = await both();
    return now.m.gpus.length === 2 && now.m.engines.length === 1 && now.m.host !== null && now.m.collectors.every((h) => h.up);
  }, 15_000, 'every collector up with 2 GPUs, the engine and the host');
  // Collectors run on their own timers: compare until one reading of both agrees (they are set in one call).
  let last: string[] = [];
  await eventually(async () => (last = differences(await both())).length === 0, 5_000, 'snapshot and /metrics agreeing').catch(() => assert.deepEqual(last, []));
  const { m } = await both();
  assert.deepEqual(m.gpus.map((g) => [g.index, g.name]), [[0, 'NVIDIA L4'], [1, 'NVIDIA L4']]);
  assert.ok(m.gpus.every((g) => g.powerWatts !== null && g.utilization !== null && g.uuid.startsWith('GPU-')));
  assert.equal(m.engines[0]!.promptTokensTotal, 43952);
  assert.deepEqual(m.collectors.map((h) => h.collector).sort(), ['engine', 'gpu', 'host']);
  const now = Date.now();
  for (const part of [...m.gpus, ...m.engines, m.host!, m.process!, ...m.collectors]) assert.ok(part.at <= now && part.at > now - 10_000, `read at ${part.at}`);
});

test('an engine that goes down leaves the snapshot with its series, its health says so; it comes back with them', async () => {
  await fake.setMode('down');
  await eventually(async () => {
    const { m, s } = await both();
    return m.engines.length === 0 && m.collectors.find((h) => h.collector === 'engine')?.up === false && !s.some((x) => x.name.startsWith('infermeter_engine_'));
  }, 8_000, 'the engine gone from both');
  const { m } = await both();
  assert.equal(m.gpus.length, 2, 'the GPUs stay');
  await fake.setMode('ok');
  await eventually(async () => {
    const now = await both();
    return now.m.engines.length === 1 && differences(now).length === 0;
  }, 8_000, 'the engine back in both');
});
