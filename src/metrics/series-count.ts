/**
 * Worst-case series counts of the request metrics, measured rather than estimated: a fresh
 * registry and RequestMetrics are fed one record for every combination of label values the
 * settings allow (every route and outcome, every model label, every tenant label, every prompt
 * class and concurrency band, every token type, every SLO series), then /metrics is rendered and
 * its sample lines counted per metric. README's metric table and the closing note of issue 17
 * come from here (`npm run docs`; test/unit/metrics/breakdown.test.ts).
 */
import { Registry } from 'prom-client';
import { DEFAULT_BUCKETS, type BucketSet } from '../lib/metric-def.js';
import { RequestMetrics, nativeOptions, type RequestMetricsSettings } from './prometheus.js';
import { judgeBatch } from './batch.js';
import { DEFAULT_IN_FLIGHT_BANDS, DEFAULT_PROMPT_CLASSES } from './breakdown.js';
import { METERING_FAILURES, OUTCOMES, TOKEN_SOURCES, UNMEASURED, type RequestRecord } from '../record/record.js';
import { ROUTE_LABELS, routeByLabel } from '../record/routes.js';
import { OTHER_MODEL } from './models.js';
import { thresholdsInBucketSet, type SloConfig } from '../slo/config.js';
import { pino } from 'pino';
import type { MachineState } from '../collectors/snapshot.js';
import { EnergyMeter } from './energy/meter.js';
import { StreamHealth } from './streams/health.js';
import { WasteLedger } from './waste/ledger.js';

export interface SeriesScenario {
  /** Models the upstream serves (each its own label value; `other` comes on top). */
  models: number;
  /** Distinct tenants sending traffic (0: tenants off). More than tenantLimit adds `other`. */
  tenants: number;
  tenantLimit?: number;
  tenantHistograms?: boolean;
  /** false: --classic-histograms=false (the native latency histograms without classic buckets). */
  classicHistograms?: boolean;
  slos: SloConfig;
}

export const NO_SLOS: SloConfig = { objective: 0.99, window: '30d', default: {}, models: {}, promptClasses: [] };

/** Sample lines on /metrics per metric name (histograms: _bucket, _sum and _count lines together). */
export async function countSeries(s: SeriesScenario): Promise<Map<string, number>> {
  return countLines(await renderScenario(s));
}

/** The /metrics text of the request metrics after every combination of label values the scenario allows. */
export async function renderScenario(s: SeriesScenario): Promise<string> {
  const registry = new Registry();
  const settings: RequestMetricsSettings = {
    promptTokensClasses: [...DEFAULT_PROMPT_CLASSES], inFlightBands: [...DEFAULT_IN_FLIGHT_BANDS],
    tenantFrom: s.tenants > 0 ? 'header' : 'none', tenantLimit: s.tenantLimit ?? 20, tenantHistograms: s.tenantHistograms ?? false,
    classicHistograms: s.classicHistograms ?? true,
  };
  const served = new Set(Array.from({ length: s.models }, (_, i) => `model-${i}`));
  const metrics = new RequestMetrics(registry, buckets(s.slos), 'vllm', s.slos, nativeOptions(), null, settings);
  const labelOf = (m: string) => (served.has(m) ? m : OTHER_MODEL);
  const energy = energyScenario(registry);
  const health = new StreamHealth(registry, buckets(s.slos));
  const waste = wasteScenario(registry, buckets(s.slos));
  const record = (r: RequestRecord) => {
    metrics.ingest(judgeBatch([r], 0, s.slos, labelOf));
    // Both endings of an ok stream: with its terminal event and without.
    health.ingest(judgeBatch([r, { ...r, terminal: !r.terminal }], 0, s.slos, labelOf));
    // Every waste cause the outcome allows: an abort after a token and before one, a refusal.
    const wasted = [{ ...r, upstream: 0 }, { ...r, upstream: 0, abortPropagation: 0.001 }, { ...r, upstream: 0, abortPropagation: 0.001, outputTokens: 0 }, { ...r, upstream: 0, status: 503 }];
    energy.ingest(judgeBatch(wasted, 0, s.slos, labelOf, new Map()));
    waste.ingest(judgeBatch(wasted, 0, s.slos, labelOf));
  };
  const models = [...served, 'unlisted-model'];
  const tenants = s.tenants > 0 ? Array.from({ length: s.tenants }, (_, i) => `tenant-${i}`) : [null];
  const promptSizes = [...DEFAULT_PROMPT_CLASSES, 1e6, -1];
  const bands = [...DEFAULT_IN_FLIGHT_BANDS, 1e4];
  for (const tenant of tenants) {
    for (const model of models) {
      for (const route of ROUTE_LABELS) {
        const info = routeByLabel(route);
        for (const outcome of OUTCOMES) {
          const base = { ...UNMEASURED, route, operation: info.operation, model, outcome, status: 200, streamed: true, errorType: null, startedAt: 0, tenant };
          const n = outcome === 'ok' ? Math.max(promptSizes.length, bands.length) : 1;
          for (let i = 0; i < n; i++) record(measured(base, promptSizes[i % promptSizes.length]!, bands[i % bands.length]!));
        }
      }
    }
  }
  // The unlabelled-by-model families: every token source and metering failure.
  const plain = { ...UNMEASURED, route: 'chat_completions', operation: 'chat', model: models[0]!, outcome: 'ok' as const, status: 200, streamed: true, errorType: null, startedAt: 0, tenant: tenants[0]! };
  for (const tokenSource of TOKEN_SOURCES) record({ ...plain, tokenSource });
  for (const meteringFailure of METERING_FAILURES) record({ ...plain, meteringFailure });
  health.ingest({ records: [], labels: [], verdicts: [], inFlight: 0, silentByModel: new Map(models.map((m) => [labelOf(m), 1])) });
  energy.settle();
  waste.tick();
  return registry.metrics();
}

/** Sample lines per metric family of a text exposition (by its # TYPE lines). */
export function countLines(text: string): Map<string, number> {
  const counts = new Map<string, number>();
  let family = '';
  for (const line of text.split('\n')) {
    if (line.startsWith('# TYPE ')) {
      family = line.split(' ')[2]!;
      counts.set(family, 0);
    } else if (line !== '' && !line.startsWith('#')) counts.set(family, counts.get(family)! + 1);
  }
  return counts;
}

/**
 * The energy consumer (metrics/energy/) on one GPU of one upstream, both prices set: every
 * record's model takes its busy, token (good and not) and cost series, the upstream its idle ones.
 */
function energyScenario(registry: Registry): { ingest: EnergyMeter['ingest']; settle(): void } {
  let now = 0;
  const gpu = (at: number) => ({ index: 0, upstreams: [], energyJoules: at / 10, energySource: 'power', energySince: 0, at });
  const machine = { read: () => ({ gpus: [gpu(now)], gpuEngines: null }) as unknown as MachineState };
  const upstreams = [{ name: 'engine', url: 'http://127.0.0.1:1', gpus: [] }] as unknown as ConstructorParameters<typeof EnergyMeter>[0]['upstreams'];
  const meter = new EnergyMeter({ registry, machine, upstreams, log: pino({ level: 'silent' }), now: () => now,
    settings: { gpuHourCost: 1, energyPrice: 1, currency: 'USD', energyPrefillRate: 10_000, promptCharsPerToken: 4 } });
  meter.tick();
  return {
    ingest: (b) => meter.ingest(b),
    settle: () => {
      // Records ran 0-2 s; the GPU reads through 6 s: 0-2 s busy, the rest idle.
      for (now = 1000; now <= 6000; now += 1000) meter.tick();
    },
  };
}

/** The waste ledger of one upstream whose engine has let go of everything by its next scrape: its release is observed. */
function wasteScenario(registry: Registry, b: Record<BucketSet, number[]>): WasteLedger {
  const machine = { read: () => ({ gpus: [], engines: [{ upstream: 'engine', running: 0, waiting: 0, at: 10_000 }], gpuEngines: null }) as unknown as MachineState };
  const upstreams = [{ name: 'engine', url: 'http://127.0.0.1:1', gpus: [] }] as unknown as ConstructorParameters<typeof WasteLedger>[0]['upstreams'];
  return new WasteLedger({ registry, machine, upstreams, buckets: b, charsPerToken: 4, log: pino({ level: 'silent' }), now: () => 5000 });
}

/** A record that reaches every histogram: timed, streamed, with tokens of every type. */
function measured(base: RequestRecord, promptTokens: number, inFlight: number): RequestRecord {
  return {
    ...base,
    ttft: 0.3, ttfo: 0.4, e2e: 2, outputTokens: 40, tokenSource: 'usage',
    inputTokens: Math.max(promptTokens, 0), inputTokensKnown: promptTokens >= 0,
    cachedInputTokens: 16, reasoningTokens: 8, inFlightAtFirstToken: inFlight, chunkGaps: new Float32Array([0.02, 0.03]),
    silenceFirst: 0.3, silenceReasoning: 0.02, silenceTool: 0.03, silenceContent: 0.02,
  };
}

function buckets(slos: SloConfig): Record<BucketSet, number[]> {
  const out = {} as Record<BucketSet, number[]>;
  for (const set of Object.keys(DEFAULT_BUCKETS) as BucketSet[]) out[set] = [...new Set([...DEFAULT_BUCKETS[set], ...thresholdsInBucketSet(slos, set)])].sort((a, b) => a - b);
  return out;
}

export function total(counts: Map<string, number>): number {
  let n = 0;
  for (const v of counts.values()) n += v;
  return n;
}
