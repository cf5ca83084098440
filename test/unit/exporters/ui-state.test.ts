/**
 * The status page's state, driven by a fake clock: rings forget what left their window,
 * percentiles weight each second by what it really held, memory stays the same over hours
 * of traffic from 20 models and 8 GPUs (and is given back when models go quiet), and the
 * JSON for that machine stays small and valid.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Registry } from 'prom-client';
import { Ring, SampleRing } from '../../../src/exporters/ui/ring.js';
import { StatusState } from '../../../src/exporters/ui/state.js';
import { judgeBatch } from '../../../src/metrics/batch.js';
import { buildStatus, ALL_MODELS } from '../../../src/exporters/ui/status-json.js';
import { UNMEASURED, type RequestRecord } from '../../../src/record/record.js';
import { GpuSeries } from '../../../src/collectors/gpu/series.js';
import { MachineSnapshot } from '../../../src/collectors/snapshot.js';
import { M } from '../../../src/slo/names.js';
import { parseSloConfig } from '../../../src/slo/config.js';
import { statusValidator } from '../../integration/ui-helpers.js';

test('a ring blanks the slots it skips and forgets what left its window', () => {
  const r = new Ring(5, 2, (n) => new Float64Array(n));
  r.add(10, 0, 1);
  r.add(10, 0, 2);
  r.add(12, 1, 7);
  assert.equal(r.get(10, 0), 3);
  assert.equal(r.get(11, 0), 0);
  assert.equal(r.sum(0, 0, 100), 3);
  r.add(16, 0, 1); // 10 and 11 have left the window [12, 16]
  assert.equal(r.get(10, 0), 0);
  assert.equal(r.sum(0, 0, 100), 1);
  assert.equal(r.get(12, 1), 7);
  r.add(30, 0, 5); // everything before is gone
  assert.equal(r.sum(1, 0, 100), 0);
  r.add(20, 0, 9); // older than the window: nowhere to count it
  assert.equal(r.sum(0, 0, 100), 5);
});

test('percentiles of raw samples: exact below the cap, weighted by each second\'s true count above it', () => {
  const s = new SampleRing(10, 32, () => 0.5);
  for (let i = 1; i <= 20; i++) s.observe(1, i / 100);
  assert.deepEqual(s.quantiles(0, 5, [0.5, 0.95, 1]).map((v) => Number(v.toFixed(4))), [0.1, 0.19, 0.2]);
  // Second 2: 1000 requests at 1 s (32 kept); second 3: 10 at 2 s (all kept). Unweighted, 10 of
  // the 42 kept values are 2 s and the P95 would read 2 s; 10 of the 1010 requests were.
  const w = new SampleRing(10, 32);
  for (let i = 0; i < 1000; i++) w.observe(2, 1);
  for (let i = 0; i < 10; i++) w.observe(3, 2);
  assert.equal(w.count(2, 3), 1010);
  assert.deepEqual(w.quantiles(2, 3, [0.5, 0.95, 0.99, 0.995]), [1, 1, 1, 2]);
  assert.ok(w.quantiles(4, 5, [0.5]).every(Number.isNaN), 'an empty window has no percentile');
});

const slos = parseSloConfig({ objective: 0.99, default: { ttft: '500ms', tpot: '50ms' } }, 'test');

function record(model: string, ttft: number, tokens = 40): RequestRecord {
  return {
    ...UNMEASURED, route: 'chat_completions', operation: 'chat', model, outcome: 'ok', status: 200, streamed: true, startedAt: 0,
    ttft, ttfo: ttft, e2e: ttft + (tokens - 1) * 0.02, inputTokens: 100, outputTokens: tokens, tokenSource: 'usage', errorType: null,
  };
}

/** 8 GPUs published the way the GPU collector publishes them. */
function gpuMachine(): { machine: MachineSnapshot; publish: (t: number) => void } {
  const machine = new MachineSnapshot();
  const series = new GpuSeries(new Registry(), machine);
  const publish = (t: number) => {
    for (let gpu = 0; gpu < 8; gpu++) {
      series.publish(
        { gpu, values: new Map<string, number | null>([[M.gpuUtil, ((t + gpu * 7) % 100) / 100], [M.gpuMemUsed, 60e9], [M.gpuPower, 350 + gpu], [M.gpuTemp, 60], [M.gpuSmActive, 0.5], [M.gpuSmOccupancy, 0.3], [M.gpuTensor, 0.2], [M.gpuDram, 0.6]]) },
        { index: gpu, uuid: `GPU-${gpu}-0000-1111-2222-333344445555`, name: 'NVIDIA H100 80GB HBM3', driverVersion: '550.54', pciBusId: `00000000:${gpu}0:00.0`, memoryTotalBytes: 85e9 },
      );
    }
  };
  return { machine, publish };
}

const MODELS = Array.from({ length: 20 }, (_, i) => `meta-llama/Llama-3.1-70B-Instruct-finetune-${String(i).padStart(2, '0')}`);

function heapUsed(): number {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

test('memory stays bounded over 3 hours of 20 models and 8 GPUs (fake clock), and is given back when they go quiet', { timeout: 120_000 }, async () => {
  let now = Date.UTC(2026, 0, 1);
  const { machine, publish } = gpuMachine();
  const state = new StatusState({ slos, machine, now: () => now, random: () => 0.37 });
  const label = (m: string) => m;
  const sizes = new Map<number, { bytes: number; heap: number }>();
  for (let second = 1; second <= 3 * 3600; second++) {
    now += 1000;
    publish(second);
    const batch: RequestRecord[] = [];
    for (let k = 0; k < MODELS.length; k++) for (let j = 0; j < 3; j++) batch.push(record(MODELS[k]!, 0.1 + ((second * 3 + j + k) % 50) / 100));
    state.ingest(judgeBatch(batch, 40, slos, label));
    await state.tick();
    if (second === 20 * 60 || second === 3600 || second === 3 * 3600) sizes.set(second, { bytes: state.bytes, heap: heapUsed() });
  }
  const [early, hour, end] = [sizes.get(1200)!, sizes.get(3600)!, sizes.get(10800)!];
  console.log(`ring bytes: ${early.bytes} at 20 min, ${hour.bytes} at 1 h, ${end.bytes} at 3 h (${(end.bytes / 21 / 1024).toFixed(1)} KiB per model); heap ${(early.heap / 2 ** 20).toFixed(1)} → ${(hour.heap / 2 ** 20).toFixed(1)} → ${(end.heap / 2 ** 20).toFixed(1)} MiB`);
  assert.equal(hour.bytes, early.bytes, 'every ring was allocated once');
  assert.equal(end.bytes, early.bytes);
  assert.ok(end.bytes < 3 * 2 ** 20, `${end.bytes} bytes for 20 models and 8 GPUs`);
  // 1.9 million records later the heap is where it was after 20 minutes (give or take GC noise).
  assert.ok(end.heap - early.heap < 4 * 2 ** 20, `heap grew ${(end.heap - early.heap) / 2 ** 20} MiB between 20 min and 3 h`);
  const models = state.models.size;
  // An hour and a bit of silence: every model has left the coarse window and is dropped.
  for (let second = 0; second < 3700; second += 10) {
    now += 10_000;
    await state.tick();
  }
  assert.equal(models, 20);
  assert.equal(state.models.size, 0);
  assert.ok(state.bytes < early.bytes / 10, `${state.bytes} bytes once every model is gone`);
});

test('the status JSON for 20 models and 8 GPUs is small, and valid', { timeout: 60_000 }, async () => {
  let now = Date.UTC(2026, 0, 1);
  const { machine, publish } = gpuMachine();
  const state = new StatusState({ slos, machine, now: () => now });
  for (let second = 1; second <= 16 * 60; second++) {
    now += 1000;
    publish(second);
    const batch = MODELS.flatMap((m, k) => [record(m, 0.2 + (k % 5) / 10), record(m, 0.45 + (second % 7) / 10)]);
    state.ingest(judgeBatch(batch, 40, slos, (m) => m));
    await state.tick();
  }
  const validate = statusValidator();
  const full = buildStatus(state, { model: ALL_MODELS, since: 0 }, null);
  const json = JSON.stringify(full);
  const last = full.series.start + (full.series.points - 1) * 1000;
  now += 1000;
  await state.tick();
  const incremental = JSON.stringify(buildStatus(state, { model: MODELS[3]!, since: last }, null));
  console.log(`status JSON, 20 models and 8 GPUs: ${(json.length / 1024).toFixed(1)} KiB with 15 minutes of series, ${(incremental.length / 1024).toFixed(1)} KiB for one refresh`);
  assert.ok(validate(full), JSON.stringify(validate.errors));
  assert.ok(validate(JSON.parse(incremental)), JSON.stringify(validate.errors));
  assert.equal(full.models.length, 20);
  assert.equal(full.gpus.length, 8);
  assert.equal(full.series.points, 900);
  assert.equal(JSON.parse(incremental).series.points, 1);
  assert.ok(json.length < 200 * 1024, `${json.length} bytes on first load`);
  assert.ok(incremental.length < 32 * 1024, `${incremental.length} bytes per refresh`);
  // The per-model figures are there: a model whose TTFTs straddle the 500 ms SLO burns budget.
  const slow = full.models.find((m) => m.model === MODELS[4])!;
  assert.ok(slow.slos.find((s) => s.slo === 'ttft')!.burnRate5m! > 1, JSON.stringify(slow.slos));
  assert.equal(full.gpus[7]!.memoryTotalBytes, 85e9);
  assert.equal(full.gpus[0]!.name, 'NVIDIA H100 80GB HBM3');
});

test('burn rates and attainment: 5 m forgets what 1 h still holds; rates cover the last 10 s', async () => {
  let now = Date.UTC(2026, 0, 1, 12);
  const state = new StatusState({ slos, machine: new MachineSnapshot(), now: () => now });
  const label = (m: string) => m;
  // 10 requests, 4 over the 500 ms TTFT threshold: 40% bad against a 1% budget = 40× burn.
  state.ingest(judgeBatch(Array.from({ length: 10 }, (_, i) => record('m', i < 4 ? 0.9 : 0.1)), 0, slos, label));
  now += 1000;
  await state.tick();
  let m = buildStatus(state, { model: ALL_MODELS, since: 0 }, null).models[0]!;
  const ttft = () => m.slos.find((s) => s.slo === 'ttft')!;
  assert.equal(m.requestsPerSecond, 1, '10 requests over the 10 s rate window');
  assert.equal(m.outputTokensPerSecond, 40);
  assert.deepEqual([ttft().attainment5m, ttft().burnRate5m, ttft().attainment1h, ttft().burnRate1h], [0.6, 40, 0.6, 40]);
  assert.equal(m.ttft.count, 10);
  assert.equal(m.ttft.p50, 0.1);
  assert.equal(m.ttft.p99, 0.9);
  // Six minutes later, 10 good ones: the 5-minute window holds only those, the hour all 20.
  now += 6 * 60_000;
  state.ingest(judgeBatch(Array.from({ length: 10 }, () => record('m', 0.1)), 0, slos, label));
  now += 1000;
  await state.tick();
  m = buildStatus(state, { model: ALL_MODELS, since: 0 }, null).models[0]!;
  assert.deepEqual([ttft().attainment5m, ttft().burnRate5m, ttft().judged5m], [1, 0, 10]);
  assert.deepEqual([ttft().attainment1h, ttft().burnRate1h, ttft().judged1h], [0.8, 20, 20]);
  assert.equal(m.ttft.count, 10, 'percentiles cover the last minute only');
  assert.equal(m.ttft.p99, 0.1);
  assert.deepEqual(m.outcomes5m, { ok: 10 });
});

test('the route split: requests per API over 5 minutes, old slots forgotten', async () => {
  let now = Date.UTC(2026, 0, 1, 12);
  const state = new StatusState({ slos, machine: new MachineSnapshot(), now: () => now });
  const routed = (route: string, n: number) => Array.from({ length: n }, () => ({ ...record('m', 0.1), route }));
  state.ingest(judgeBatch([...routed('chat_completions', 3), ...routed('messages', 5)], 0, slos, (m) => m));
  now += 6 * 60_000;
  state.ingest(judgeBatch([...routed('responses', 2), ...routed('messages', 1)], 0, slos, (m) => m));
  now += 1000;
  await state.tick();
  const doc = buildStatus(state, { model: ALL_MODELS, since: 0 }, null);
  assert.deepEqual(doc.routes5m, { responses: 2, messages: 1 });
  assert.deepEqual(state.routes(3600), { chat_completions: 3, messages: 6, responses: 2 });
  assert.ok(statusValidator()(doc), 'the document stays valid');
});

test('per API: every model together, one row per generation API with its own latencies; other routes have none', async () => {
  let now = Date.UTC(2026, 0, 1, 12);
  const state = new StatusState({ slos, machine: new MachineSnapshot(), now: () => now });
  const routed = (route: string, model: string, ttft: number, n: number) => Array.from({ length: n }, () => ({ ...record(model, ttft), route }));
  // Two models on each API: the API's row merges them, its TTFT is the API's own.
  state.ingest(judgeBatch([
    ...routed('messages', 'a', 0.12, 4), ...routed('messages', 'b', 0.12, 4),
    ...routed('responses', 'a', 0.11, 8),
    ...routed('chat_completions', 'b', 0.065, 8),
    ...routed('embeddings', 'a', -1, 3),
  ], 0, slos, (m) => m));
  now += 1000;
  await state.tick();
  const doc = buildStatus(state, { model: ALL_MODELS, since: 0 }, null);
  assert.deepEqual(doc.apis.map((a) => a.api), ['chat_completions', 'messages', 'responses'], 'in API_LABELS order, only those seen');
  const row = (api: string) => doc.apis.find((a) => a.api === api)!;
  assert.deepEqual(doc.apis.map((a) => [a.ttft.count, a.ttft.mean]), [[8, 0.065], [8, 0.12], [8, 0.11]]);
  assert.equal(row('messages').requestsPerSecond, 0.8, '8 requests over the 10 s rate window');
  assert.deepEqual(row('responses').outcomes5m, { ok: 8 });
  assert.equal(doc.models.find((m) => m.model === 'a')!.ttft.count, 4 + 8, 'a model\'s row still merges its APIs');
  const validate = statusValidator();
  assert.ok(validate(doc), JSON.stringify(validate.errors));
});
