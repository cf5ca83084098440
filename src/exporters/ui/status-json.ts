/**
 * The document served at /api/v1/status (schemas/status.schema.json, docs/status-page.md):
 * what the service is doing now, per model, GPU and upstream engine, plus the chart series of one
 * model (or all together) for the last 15 minutes, or only the points after `since`.
 * Seconds, ratios (0-1) and Unix milliseconds throughout; null where nothing was measured.
 */
import { SLO_NAMES, thresholdsFor, type SloName, type Thresholds } from '../../slo/config.js';
import { errorBudget } from '../../slo/config.js';
import type { Outcome } from '../../record/record.js';
import { CHART_SECONDS, LATENCIES, NOW_SECONDS, PERCENTILE_SECONDS, RATE_SECONDS, COARSE_SLOT_SECONDS, type LatencyStats, type ModelState } from './model-state.js';
import type { CollectorStatus, EngineTotals, GpuStatus, UpstreamEngine } from './machine-read.js';
import { HOST_FIELDS, type StatusState } from './state.js';
import type { BottleneckVerdict } from '../../metrics/bottleneck/judge.js';
import type { PrefixCacheStatus } from '../../metrics/prefix/live.js';
import { abortDocument, modelWaste, type AbortStatus, type ModelWasteStatus, type WasteProvider } from './waste-json.js';
import { energyDocument, modelEnergy, type EnergyDocument, type EnergyProvider, type ModelEnergyStatus } from './energy-json.js';
import type { CapacityEstimate } from '../../metrics/headroom/estimate.js';
import { API_LABELS } from '../../record/routes.js';

export const STATUS_VERSION = 1;
/** The model name that selects every model together for the charts. */
export const ALL_MODELS = '*';
/** Burn-rate and outcome windows, seconds. */
const WINDOWS = { '5m': 300, '1h': 3600 } as const;

/** One request of the slow-request log (issue 16), as the page shows it. */
export interface SlowRequest {
  model: string;
  /** Unix ms. */
  startedAt: number;
  outcome: string;
  ttft: number | null;
  tpot: number | null;
  e2e: number | null;
  inputTokens: number | null;
  outputTokens: number | null;
  inFlightAtStart: number | null;
  traceId: string | null;
}

/**
 * Where the slow-request table comes from. The slow-request log (/debug/requests) provides
 * it once it exists: the lead wires `StatusPage.slowRequests` to an adapter over its
 * snapshot(); until then the table is left out.
 */
export interface SlowRequestProvider {
  slowRequests(): readonly SlowRequest[];
}

/** The metrics side's current verdict per model label (src/metrics/bottleneck/live.ts). */
export interface BottleneckProvider {
  verdicts(): ReadonlyMap<string, BottleneckVerdict>;
}

/** The metrics side's capacity estimate per model label (src/metrics/headroom/live.ts). */
export interface CapacityProvider {
  capacities(): ReadonlyMap<string, CapacityEstimate>;
}

export interface ModelStatus {
  model: string;
  /** What limits the model now (null: not judged yet, or no provider). */
  bottleneck: BottleneckVerdict | null;
  /** How much load it takes before its first P99 SLO breaks (docs/headroom.md); null: not estimated yet, or no provider. */
  capacity: CapacityEstimate | null;
  requestsPerSecond: number;
  outputTokensPerSecond: number;
  inputTokensPerSecond: number;
  /** Generation requests of this model in flight now, machine-wide. */
  inFlight: number;
  /** Time-average requests in flight over the rate window, from the E2E of those that finished. */
  concurrency: number;
  ttft: LatencyStats;
  tpot: LatencyStats;
  e2e: LatencyStats;
  outcomes5m: Partial<Record<Outcome, number>>;
  slos: SloStatus[];
  /** Unix ms of its last finished request. */
  lastSeenAt: number;
  /** Its attributed energy and cost over the energy window (docs/energy.md); absent: none attributed yet, or no GPU collector. */
  energy?: ModelEnergyStatus;
  /** Prefix reuse over the prefix-cache window, per upstream, and the verdict (docs/prefix-cache.md); absent without --prefix-cache, or before a request. */
  prefixCache?: PrefixCacheStatus;
  /** Wasted tokens by cause and the effective goodput (docs/waste.md); absent before a request reached an upstream. */
  waste?: ModelWasteStatus;
}

/**
 * One generation API, every model together: the same figures as a model's row, from the same
 * records, so Messages, Responses and chat streams are told apart as the `api` label of the
 * latency histograms tells them apart on /metrics.
 */
export interface ApiStatus {
  /** The `api` label: chat_completions, completions, messages or responses. */
  api: string;
  requestsPerSecond: number;
  outputTokensPerSecond: number;
  ttft: LatencyStats;
  tpot: LatencyStats;
  e2e: LatencyStats;
  outcomes5m: Partial<Record<Outcome, number>>;
  /** Unix ms of its last finished request. */
  lastSeenAt: number;
}

export interface SloStatus {
  slo: SloName;
  thresholdSeconds: number;
  /** good / judged over 5 m and 1 h (null: nothing judged). */
  attainment5m: number | null;
  attainment1h: number | null;
  /** (bad / judged) / (1 − objective): 1 spends the budget exactly over the SLO window. */
  burnRate5m: number | null;
  burnRate1h: number | null;
  judged5m: number;
  judged1h: number;
}

/** The engine figures the page prints: the latest gauges, and the counters as rates over 5 minutes. */
export type EngineFigures = Omit<EngineTotals, 'preemptionsTotal' | 'prefixCacheHitsTotal' | 'prefixCacheQueriesTotal'> & { preemptions5m: number | null };

/** One upstream's engine: its panel on the page. */
export type EngineStatus = Pick<UpstreamEngine, 'upstream' | 'engine' | 'up'> & EngineFigures;

export interface StatusDocument {
  version: number;
  generatedAt: number;
  startedAt: number;
  windows: { nowSeconds: number; rateSeconds: number; percentileSeconds: number; chartSeconds: number; sloSlotSeconds: number };
  objective: number;
  inFlight: number;
  /** Requests per route (chat_completions, completions, messages, responses, ...) over the last 5 minutes: the API split. */
  routes5m: Record<string, number>;
  models: ModelStatus[];
  /** Per generation API that finished a request in the last hour, in API_LABELS order (routes.ts). */
  apis: ApiStatus[];
  gpus: GpuStatus[];
  /** Every engine together: KV-cache usage their mean, counts and 5-minute increases summed, the prefix-cache ratio their hits over their queries; null when none has a figure. */
  engine: EngineFigures | null;
  /** Each upstream's engine, in configured order; one whose /metrics does not answer is `up: false` with null figures. */
  engines: EngineStatus[];
  /** One row per collector instance (the engine collector's: one per upstream, named). */
  collectors: CollectorStatus[];
  series: Series;
  slowRequests?: SlowRequest[];
  /** GPU energy and cost (docs/energy.md); absent without the GPU collector. */
  energy?: EnergyDocument;
  /** Per upstream: client aborts, their propagation P99, the engine's last release (docs/waste.md). */
  aborts?: AbortStatus;
}

export interface Series {
  model: string;
  /** Unix ms of the first point; one point per stepMs. */
  start: number;
  stepMs: number;
  points: number;
  thresholds: Thresholds;
  requestsPerSecond: (number | null)[];
  outputTokensPerSecond: (number | null)[];
  ttft: { p50: (number | null)[]; p95: (number | null)[]; p99: (number | null)[] };
  tpot: { p50: (number | null)[]; p95: (number | null)[]; p99: (number | null)[] };
  inFlight: (number | null)[];
  kvCacheUsage: (number | null)[];
  engineRunning: (number | null)[];
  engineWaiting: (number | null)[];
  gpuUtilization: Record<string, (number | null)[]>;
}

/** Significant digits: enough for any figure the page prints, few enough to keep the JSON small. */
function round(v: number): number | null {
  return Number.isFinite(v) ? Number(v.toPrecision(4)) : null;
}

function stats(s: LatencyStats): LatencyStats {
  return { p50: s.p50 === null ? null : round(s.p50), p95: s.p95 === null ? null : round(s.p95), p99: s.p99 === null ? null : round(s.p99), mean: s.mean === null ? null : round(s.mean), count: s.count };
}

function modelStatus(state: StatusState, label: string, m: ModelState, second: number, now: number, bottleneck: BottleneckVerdict | null, capacity: CapacityEstimate | null): ModelStatus {
  const r = m.rates(second);
  const budget = errorBudget(state.slos);
  const t = thresholdsFor(state.slos, label);
  const slos: SloStatus[] = [];
  for (const slo of SLO_NAMES) {
    const threshold = t[slo];
    if (threshold === undefined) continue;
    const w5 = m.verdicts(slo, now, WINDOWS['5m']);
    const w1 = m.verdicts(slo, now, WINDOWS['1h']);
    const j5 = w5.good + w5.bad;
    const j1 = w1.good + w1.bad;
    slos.push({
      slo, thresholdSeconds: threshold,
      attainment5m: j5 ? round(w5.good / j5) : null, attainment1h: j1 ? round(w1.good / j1) : null,
      burnRate5m: j5 ? round(w5.bad / j5 / budget) : null, burnRate1h: j1 ? round(w1.bad / j1 / budget) : null,
      judged5m: j5, judged1h: j1,
    });
  }
  return {
    model: label, bottleneck, capacity,
    requestsPerSecond: round(r.requests)!, outputTokensPerSecond: round(r.outputTokens)!, inputTokensPerSecond: round(r.inputTokens)!, inFlight: state.inFlightByModel.get(label) ?? 0, concurrency: round(r.concurrency)!,
    ttft: stats(m.latency('ttft', second)), tpot: stats(m.latency('tpot', second)), e2e: stats(m.latency('e2e', second)),
    outcomes5m: m.outcomes(now, WINDOWS['5m']), slos, lastSeenAt: Math.round(m.lastSeen),
  };
}

function apiStatus(api: string, m: ModelState, second: number, now: number): ApiStatus {
  const r = m.rates(second);
  return {
    api, requestsPerSecond: round(r.requests)!, outputTokensPerSecond: round(r.outputTokens)!,
    ttft: stats(m.latency('ttft', second)), tpot: stats(m.latency('tpot', second)), e2e: stats(m.latency('e2e', second)),
    outcomes5m: m.outcomes(now, WINDOWS['5m']), lastSeenAt: Math.round(m.lastSeen),
  };
}

export interface StatusQuery {
  /** Chart series of this model label, or ALL_MODELS. */
  model: string;
  /** Only chart points after this Unix ms (0: the whole 15 minutes). */
  since: number;
}

export function buildStatus(
  state: StatusState, q: StatusQuery, slow: SlowRequestProvider | null, bottlenecks: BottleneckProvider | null = null, capacities: CapacityProvider | null = null,
  energy: EnergyProvider | null = null,
  prefix: PrefixProvider | null = null,
  waste: WasteProvider | null = null,
): StatusDocument {
  const now = state.now();
  const second = state.closedThrough;
  const verdicts = bottlenecks?.verdicts();
  const caps = capacities?.capacities();
  const power = energy?.status();
  const reuse = prefix?.status();
  const wasted = waste?.status();
  const models = [...state.models].map(([label, m]) => modelWaste(withPrefix(modelEnergy(modelStatus(state, label, m, second, now, verdicts?.get(label) ?? null, caps?.get(label) ?? null), power), reuse?.get(label)), wasted));
  models.sort((a, b) => b.requestsPerSecond - a.requestsPerSecond || b.lastSeenAt - a.lastSeenAt || a.model.localeCompare(b.model));
  const e = state.engine;
  const doc: StatusDocument = {
    version: STATUS_VERSION,
    generatedAt: now,
    startedAt: state.startedAt,
    windows: { nowSeconds: NOW_SECONDS, rateSeconds: RATE_SECONDS, percentileSeconds: PERCENTILE_SECONDS, chartSeconds: CHART_SECONDS, sloSlotSeconds: COARSE_SLOT_SECONDS },
    objective: state.slos.objective,
    inFlight: state.inFlight,
    routes5m: state.routes(WINDOWS['5m']),
    models,
    apis: API_LABELS.flatMap((api) => {
      const m = state.apis.get(api);
      return m ? [apiStatus(api, m, second, now)] : [];
    }),
    gpus: state.gpus,
    engine: e && {
      kvCacheUsage: e.kvCacheUsage, running: e.running, waiting: e.waiting,
      preemptions5m: state.enginesIncrease('preemptionsTotal', WINDOWS['5m']),
      prefixCacheHitRatio: ratio(state.enginesIncrease('prefixCacheHitsTotal', WINDOWS['5m']), state.enginesIncrease('prefixCacheQueriesTotal', WINDOWS['5m'])) ?? e.prefixCacheHitRatio,
    },
    engines: state.engines.map((u) => engineStatus(state, u)),
    collectors: state.collectors,
    series: series(state, q, second),
  };
  const rows = slow?.slowRequests();
  if (rows) doc.slowRequests = rows.slice(0, 50);
  if (power) doc.energy = energyDocument(power);
  if (wasted) doc.aborts = abortDocument(wasted);
  return doc;
}

/** The metrics side's prefix-cache model, as the page reads it. */
export interface PrefixProvider {
  status(): ReadonlyMap<string, PrefixCacheStatus>;
}

const r4 = (v: number | null) => (v === null ? null : Number(v.toFixed(4)));

function withPrefix(m: ModelStatus, p: PrefixCacheStatus | undefined): ModelStatus {
  if (!p) return m;
  const ratios = <T extends { unbounded: number | null; engineSize: number | null; engine: number | null }>(x: T): T => ({ ...x, unbounded: r4(x.unbounded), engineSize: r4(x.engineSize), engine: r4(x.engine) });
  return {
    ...m,
    prefixCache: {
      ...p, keptShare: r4(p.keptShare)!, affine: r4(p.affine), upstreams: p.upstreams.map(ratios),
      verdict: p.verdict && { ...p.verdict, evidence: { ...ratios(p.verdict.evidence), affine: r4(p.verdict.evidence.affine) } },
    },
  };
}

function engineStatus(state: StatusState, u: UpstreamEngine): EngineStatus {
  const increase = (f: Parameters<StatusState['engineIncrease']>[1]) => state.engineIncrease(u.upstream, f, WINDOWS['5m']);
  return {
    upstream: u.upstream, engine: u.engine, up: u.up,
    kvCacheUsage: u.kvCacheUsage, running: u.running, waiting: u.waiting,
    preemptions5m: increase('preemptionsTotal'),
    prefixCacheHitRatio: ratio(increase('prefixCacheHitsTotal'), increase('prefixCacheQueriesTotal')) ?? u.prefixCacheHitRatio,
  };
}

/** Prefix-cache hits / queries over the window, from the engine's counters (null: no queries counted). */
function ratio(hits: number | null, queries: number | null): number | null {
  return hits !== null && queries ? round(hits / queries) : null;
}

function series(state: StatusState, q: StatusQuery, last: number): Series {
  // An unknown model (or one dropped since) falls back to every model: nothing from the query is echoed.
  const own = q.model === ALL_MODELS ? undefined : state.models.get(q.model);
  const m = own ?? state.all;
  const first = Math.max(last - CHART_SECONDS + 1, Math.floor(state.startedAt / 1000), q.since > 0 ? Math.floor(q.since / 1000) + 1 : -Infinity);
  const n = Math.max(0, last - first + 1);
  const field = (f: Parameters<ModelState['chartField']>[0]) => m.chartField(f, first, last).map(round);
  const host = (i: number) => {
    const out: (number | null)[] = [];
    for (let s = first; s <= last; s++) out.push(round(state.host.get(s, i)));
    return out;
  };
  const gpuUtilization: Record<string, (number | null)[]> = {};
  for (const [id, ring] of state.gpuUtil) {
    const out: (number | null)[] = [];
    for (let s = first; s <= last; s++) out.push(round(ring.get(s, 0)));
    gpuUtilization[id] = out;
  }
  const quantiles = (l: (typeof LATENCIES)[number]) => ({ p50: field(`${l}.p50`), p95: field(`${l}.p95`), p99: field(`${l}.p99`) });
  return {
    model: own ? q.model : ALL_MODELS,
    start: first * 1000, stepMs: 1000, points: n,
    thresholds: thresholdsFor(state.slos, own ? q.model : ''),
    requestsPerSecond: field('requests'), outputTokensPerSecond: field('outputTokens'),
    ttft: quantiles('ttft'), tpot: quantiles('tpot'),
    inFlight: host(HOST_FIELDS.indexOf('inFlight')), kvCacheUsage: host(HOST_FIELDS.indexOf('kvCacheUsage')),
    engineRunning: host(HOST_FIELDS.indexOf('engineRunning')), engineWaiting: host(HOST_FIELDS.indexOf('engineWaiting')),
    gpuUtilization,
  };
}
