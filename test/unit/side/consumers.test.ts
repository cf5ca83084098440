/**
 * src/side/consumers.ts: the table makes each enabled consumer once, in its order, named as its
 * row; the status page is wired to the trail's slow-request log, the bottleneck verdicts and the
 * capacity estimates of the rows above it; a row the config turns off (ui) or that turns itself off (otlp without
 * OTEL_* variables) makes nothing.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { resolveConfig } from '../../../src/config.js';
import { CONSUMERS } from '../../../src/side/consumers.js';
import { MetricsSide } from '../../../src/side/side.js';
import { StatusPage } from '../../../src/exporters/ui/status-page.js';
import { BottleneckMonitor } from '../../../src/metrics/bottleneck/live.js';
import { HeadroomMonitor } from '../../../src/metrics/headroom/live.js';
import { PromptBlocksStage } from '../../../src/metrics/prompt/blocks.js';
import { WorkloadTrace } from '../../../src/exporters/workload-trace/trace.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EnergyMeter } from '../../../src/metrics/energy/meter.js';
import { WasteLedger } from '../../../src/metrics/waste/ledger.js';
import { PrefixCacheMonitor } from '../../../src/metrics/prefix/live.js';

const log = pino({ level: 'silent' });
const side = (flags: Record<string, string>) => new MetricsSide(resolveConfig({ upstream: 'http://127.0.0.1:9', ...flags }, {}), log);

test('one consumer per enabled row, in table order, named as its row; the page reads the trail, the verdicts, the capacities and the energy', async () => {
  assert.deepEqual(CONSUMERS.map((c) => c.name), ['prompt-blocks', 'workload-trace', 'prefix-cache', 'requests', 'stream-health', 'waste', 'otlp', 'trail', 'bottleneck', 'headroom', 'energy', 'ui']);
  const on = side({});
  assert.deepEqual(on.consumers.map((c) => c.name), ['requests', 'stream-health', 'waste', 'trail', 'bottleneck', 'headroom', 'energy', 'ui'], 'no OTEL_* variable: no OTLP consumer; no --workload-trace: no prompt hashing');
  const page = on.consumer(StatusPage)!;
  assert.ok(page.slowRequests, 'the slow-request table reads the trail');
  assert.equal(page.bottlenecks, on.consumer(BottleneckMonitor));
  assert.equal(page.capacities, on.consumer(HeadroomMonitor), 'the page shows the capacity estimates');
  assert.equal(page.energy, on.consumer(EnergyMeter), 'the page shows the energy consumer\'s figures');
  assert.equal(page.waste, on.consumer(WasteLedger), 'the page shows the waste ledger\'s figures');
  const off = side({ ui: 'false', collectorGpu: 'false' });
  assert.deepEqual(off.consumers.map((c) => c.name), ['requests', 'stream-health', 'waste', 'trail', 'bottleneck', 'headroom'], 'no GPU collector: no energy');
  await on.close();
  await off.close();
});

test('--workload-trace: the prompt hashing row, then the trace that reads it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'consumers-'));
  const traced = side({ workloadTrace: join(dir, 't.jsonl'), promptHashSalt: 's' });
  assert.deepEqual(traced.consumers.map((c) => c.name), ['prompt-blocks', 'workload-trace', 'requests', 'stream-health', 'waste', 'trail', 'bottleneck', 'headroom', 'energy', 'ui']);
  assert.ok(traced.consumer(WorkloadTrace));
  assert.ok(traced.consumer(PromptBlocksStage));
  await traced.close();
  rmSync(dir, { recursive: true, force: true });
});

test('--prefix-cache: the prompt hashing row, then the model that reads it; the page shows its figures; no salt given, one made for the process', async () => {
  const modelled = side({ prefixCache: 'true' });
  assert.deepEqual(modelled.consumers.map((c) => c.name), ['prompt-blocks', 'prefix-cache', 'requests', 'stream-health', 'waste', 'trail', 'bottleneck', 'headroom', 'energy', 'ui']);
  assert.equal(modelled.consumer(StatusPage)!.prefix, modelled.consumer(PrefixCacheMonitor));
  const a = resolveConfig({ upstream: 'http://127.0.0.1:9', prefixCache: 'true' }, {});
  const b = resolveConfig({ upstream: 'http://127.0.0.1:9', prefixCache: 'true' }, {});
  assert.match(a.promptHashSalt, /^[0-9a-f]{32}$/);
  assert.equal(a.promptHashSalt, b.promptHashSalt, 'a reload resolves the same salt');
  await modelled.close();
});
