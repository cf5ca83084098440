/**
 * src/metrics/energy/meter.ts, the consumer, on a machine snapshot fed the way the GPU collector
 * feeds it (collectors/gpu/series.ts) and judged batches built by hand, on a clock of its own:
 * fixed prices over a known window give the exact cost; a model's request takes the busy share
 * of the seconds it ran, the rest is idle; per token over all tokens and over good tokens.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { pino } from 'pino';
import { MachineSnapshot } from '../../../src/collectors/snapshot.js';
import { GpuSeries } from '../../../src/collectors/gpu/series.js';
import { EnergyMeter } from '../../../src/metrics/energy/meter.js';
import type { EnergySettings } from '../../../src/metrics/energy/settings.js';
import { singleUpstream } from '../../../src/lib/upstream-spec.js';
import { ENGINES } from '../../../src/lib/engines.js';
import { UNMEASURED, type RequestRecord } from '../../../src/record/record.js';
import type { JudgedBatch } from '../../../src/metrics/batch.js';
import { parsePrometheusText } from '../../../src/lib/prom-text.js';

const log = pino({ level: 'silent' });
const upstreams = singleUpstream('http://127.0.0.1:8000', {
  engine: 'vllm', engineMetrics: '', connections: 1, connectTimeout: 1, headersTimeout: 1, idleTimeout: 1, upstreamCa: '', upstreamCert: '', upstreamKey: '', upstreamInsecureSkipVerify: false, engines: ENGINES,
});
const A = upstreams[0]!.name;

/** Two GPUs at constant power, sampled every second from 0 to `seconds`, the meter ticking after each sample. */
function run(settings: EnergySettings, seconds: number, watts: number, during?: (t: number, meter: EnergyMeter) => void) {
  const registry = new Registry();
  const machine = new MachineSnapshot();
  const gpus = new GpuSeries(new Registry(), machine);
  let now = 0;
  const meter = new EnergyMeter({ registry, machine, settings, upstreams, log, now: () => now });
  for (let t = 0; t <= seconds; t++) {
    now = t * 1000;
    for (const gpu of [0, 1]) gpus.publish({ gpu, values: new Map([['infermeter_gpu_power_watts', watts]]) }, undefined, now);
    during?.(t, meter);
    meter.tick();
  }
  now = (seconds + 5) * 1000;
  meter.tick();
  return { registry, meter };
}

async function series(registry: Registry, name: string) {
  return parsePrometheusText(await registry.metrics()).samples.filter((s) => s.name === name);
}

const near = (a: number | undefined, b: number, what: string) => assert.ok(a !== undefined && Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(b)), `${what}: ${a} vs ${b}`);

test('a fixed GPU-hour price over a known window gives the exact amount: 2 GPUs × 1 h × 2.5 EUR = 5 EUR; 0.6 kWh × 0.12 = 0.072', async () => {
  const { registry, meter } = run({ gpuHourCost: 2.5, energyPrice: 0.12, currency: 'EUR', energyPrefillRate: 0, promptCharsPerToken: 4 }, 3600, 300);
  const cost = await series(registry, 'infermeter_cost_total');
  const of = (kind: string) => cost.find((s) => s.labels['kind'] === kind);
  assert.deepEqual(of('gpu_time')!.labels, { gen_ai_request_model: '', upstream: A, kind: 'gpu_time', currency: 'EUR' }, 'no request ran: idle, the upstream\'s, an empty model');
  near(of('gpu_time')!.value, 5, 'gpu_time');
  near(of('energy')!.value, 0.072, 'energy');
  const energy = await series(registry, 'infermeter_energy_joules_total');
  assert.deepEqual(energy.map((s) => s.labels['state']), ['idle']);
  near(energy[0]!.value, 2 * 300 * 3600, 'joules');
  const doc = meter.status();
  assert.equal(doc.currency, 'EUR');
  assert.deepEqual(doc.gpus.map((g) => [g.gpu, g.source, g.joules]), [['0', 'power', 300 * 3600], ['1', 'power', 300 * 3600]]);
});

test('no price: no cost series, and the status says so; a price of one kind: that kind only', async () => {
  const none = run({ gpuHourCost: 0, energyPrice: 0, currency: 'USD', energyPrefillRate: 0, promptCharsPerToken: 4 }, 10, 100);
  assert.deepEqual(await series(none.registry, 'infermeter_cost_total'), []);
  assert.equal(none.meter.status().currency, null);
  const one = run({ gpuHourCost: 3600, energyPrice: 0, currency: 'USD', energyPrefillRate: 0, promptCharsPerToken: 4 }, 10, 100);
  const cost = await series(one.registry, 'infermeter_cost_total');
  assert.deepEqual(cost.map((s) => [s.labels['kind'], s.value]), [['gpu_time', 20]], '2 GPUs × 10 s at 1 USD a GPU-second');
});

const rec = (over: Partial<RequestRecord>): RequestRecord => ({
  ...UNMEASURED, route: 'chat_completions', operation: 'chat', model: 'm', outcome: 'ok', status: 200, streamed: true, errorType: null, tenant: null, upstream: 0, modelAdmitted: true,
  startedAt: 0, ...over,
});

test('a request takes the busy share of the seconds it ran; per token over all tokens and good tokens; busy + idle = the GPUs\' energy', async () => {
  const batch = (records: RequestRecord[], labels: string[], good: boolean[], inFlight: [string, number][]): JudgedBatch => ({
    records, labels, verdicts: good.map((g) => [{ slo: 'ttft', name: 'ttft', good: g }]), inFlight: 0, inFlightByModel: new Map(inFlight),
  });
  const { registry, meter } = run({ gpuHourCost: 0, energyPrice: 0.5, currency: 'USD', energyPrefillRate: 0, promptCharsPerToken: 4 }, 100, 200, (t, m) => {
    // x runs 10-30 s (400 tokens, meets its SLOs), y 20-30 s (100 tokens, misses one): in flight meanwhile, handed in as they end.
    if (t >= 10 && t < 30) m.ingest(batch([], [], [], t < 20 ? [['x', 1]] : [['x', 1], ['y', 1]]));
    if (t === 30) m.ingest(batch([rec({ startedAt: 10_000, ttft: 0.5, e2e: 20, outputTokens: 400 }), rec({ startedAt: 20_000, ttft: 0.5, e2e: 10, outputTokens: 100 })], ['x', 'y'], [true, false], []));
  });
  const energy = await series(registry, 'infermeter_energy_joules_total');
  const j = (model: string, state = 'busy') => energy.find((s) => s.labels['gen_ai_request_model'] === model && s.labels['state'] === state)?.value;
  const perSecond = 2 * 200;
  near((j('x') ?? 0) + (j('y') ?? 0) + (j('', 'idle') ?? 0), perSecond * 100, 'busy + idle = every joule of the GPUs');
  near((j('x') ?? 0) + (j('y') ?? 0), perSecond * 20, 'busy: 10-30 s');
  const tokens = await series(registry, 'infermeter_energy_output_tokens_total');
  const t = (model: string, good: string) => tokens.find((s) => s.labels['gen_ai_request_model'] === model && s.labels['good'] === good)?.value;
  near(t('x', 'true'), 400, 'x good tokens');
  near(t('y', 'false'), 100, 'y tokens, none good');
  const x = meter.status().models.get('x')!;
  near(x.joulesPerOutputToken!, j('x')! / 400, 'J per output token');
  near(x.joulesPerGoodOutputToken!, j('x')! / 400, 'all of x\'s tokens were good');
  near(x.costPerMillionOutputTokens!, ((j('x')! / 3.6e6) * 0.5 / 400) * 1e6, 'cost per million tokens');
  const y = meter.status().models.get('y')!;
  assert.equal(y.joulesPerGoodOutputToken, null, 'no good token: no figure');
  const upstream = meter.status().upstreams[0]!;
  near(upstream.busyJoules + upstream.idleJoules, perSecond * 100, 'the page\'s window holds the same');
});

test('a wasted request\'s share of the GPU time goes to infermeter_wasted_gpu_seconds_total by its cause; the energy counts it as it counts any', async () => {
  const batch = (records: RequestRecord[], inFlight: [string, number][]): JudgedBatch => ({
    records, labels: records.map(() => 'm'), verdicts: records.map(() => null), inFlight: 0, inFlightByModel: new Map(inFlight),
  });
  const { registry } = run({ gpuHourCost: 0, energyPrice: 0, currency: 'USD', energyPrefillRate: 0, promptCharsPerToken: 4 }, 40, 100, (t, m) => {
    // ok runs 10-30 s (300 tokens); the abort 10-30 s too (100 tokens to its last), its client gone at 30 s.
    if (t >= 10 && t < 30) m.ingest(batch([], [['m', 2]]));
    if (t === 30) {
      m.ingest(batch([
        rec({ startedAt: 10_000, ttft: 0.5, e2e: 20, outputTokens: 300 }),
        rec({ startedAt: 10_000, ttft: -1, e2e: 20, outputTokens: 100, outcome: 'client_abort', abortPropagation: 0.0001 }),
      ], []));
    }
  });
  const wasted = await series(registry, 'infermeter_wasted_gpu_seconds_total');
  assert.deepEqual(wasted.map((s) => s.labels), [{ gen_ai_request_model: 'm', upstream: A, cause: 'client_abort' }]);
  // 2 GPUs × 20 s busy, split by output tokens: about the abort's 100 of 400 (an abort records no
  // first token, so its tokens spread from its start: its share of the first half-second is larger).
  const v = wasted[0]!.value;
  assert.ok(v > 2 * 20 * (100 / 400) && v < 2 * 20 * (100 / 400) * 1.02, `the abort's GPU-seconds ${v}`);
  const energy = await series(registry, 'infermeter_energy_joules_total');
  near(energy.filter((s) => s.labels['state'] === 'busy').reduce((a, s) => a + s.value, 0), 2 * 100 * 20, 'busy energy whole, the waste within it');
});
