/**
 * The bench report as data: what one request measured (kept raw, every one), and the
 * summaries of a phase (single-stream or one load step) computed from those samples.
 * Pure; the JSON written to --out is this shape (schema: schemas/bench-report.schema.json).
 */
import type { RequestResult } from '../sim/load.js';
import type { Outcome as ProxyOutcome } from '../record/record.js';
import type { ApiName } from '../record/routes.js';
import type { Thresholds } from '../slo/config.js';
import { BENCH_SLOS, distribution, gaugeSummary, type BenchSlo, type Distribution, type GaugeSummary, type SloResult } from './stats.js';
import type { ReplayReport, ReplaySampleInfo } from './replay/types.js';
import type { BottleneckVerdict } from '../metrics/bottleneck/judge.js';

export const REPORT_SCHEMA_VERSION = 1;

/**
 * One per request, the proxy's outcome names (record/record.ts); client_abort = the bench was
 * stopped. `rejected` and `worker_lost` are infermeter's own, which a client of the server never meets.
 */
export type Outcome = Exclude<ProxyOutcome, 'rejected' | 'worker_lost'>;

/**
 * bench.json's `config.route` (schemas/bench-report.schema.json) spells the completions API
 * `completion`, as --route does: reports stay comparable with those written before.
 */
export function reportRoute(api: ApiName): 'completion' | Exclude<ApiName, 'completions'> {
  return api === 'completions' ? 'completion' : api;
}

export { BENCH_SLOS, type BenchSlo, type SloResult } from './stats.js';

export interface RequestSample {
  index: number;
  /** Seconds after the phase started that the request was sent. */
  start: number;
  outcome: Outcome;
  status: number;
  error: string | null;
  /** Seconds; null when not observed (no token, or not ok / fewer than 2 tokens for TPOT). */
  ttft: number | null;
  tpot: number | null;
  e2e: number;
  outputTokens: number;
  promptTokens: number | null;
  chunks: number;
  /** A replayed request: which trace line it replays and what that line recorded. */
  replay?: ReplaySampleInfo;
}

export interface PhaseSummary {
  requests: number;
  ok: number;
  errors: Partial<Record<Outcome, number>>;
  seconds: number;
  requestsPerSecond: number;
  outputTokensPerSecond: number;
  /** ok requests whose output length was exactly max_tokens. */
  outputLengthMatched: number;
  ttft: Distribution;
  tpot: Distribution;
  e2e: Distribution;
  /** Per request 1 / TPOT, tokens per second. */
  generationRate: Distribution;
  outputTokens: Distribution;
  promptTokens: Distribution;
  /** Requests meeting every SLO, per second of the phase (vLLM's goodput); null without SLOs. */
  goodput: number | null;
  goodRequests: number | null;
  slo: Partial<Record<BenchSlo, SloResult>>;
}

export interface ResourceSummary {
  gpuUtilization: GaugeSummary;
  gpuMemoryUtilization: GaugeSummary;
  gpuMemoryUsedBytes: GaugeSummary;
  gpuPowerWatts: GaugeSummary;
  kvCacheUsage: GaugeSummary;
  requestsRunning: GaugeSummary;
  requestsWaiting: GaugeSummary;
  /**
   * Prompt tokens found in the engine's prefix cache / looked up, over the phase (counter
   * deltas); null when the engine does not say. A high ratio in a benchmark of distinct
   * prompts means the server still holds them from an earlier run with the same seed.
   */
  prefixCacheHitRatio: number | null;
  /** Engine preemptions per second over the phase (counter increase); null when the engine does not say. */
  preemptionsPerSecond?: number | null;
  /** Mean engine queue and prefill time of the requests the phase finished (histogram _sum/_count increases), seconds. */
  queueTimeMean?: number | null;
  prefillTimeMean?: number | null;
  /** The worst GPU's mean power-violation ratio, and share of thermally throttled readings. */
  gpuPowerViolation?: number | null;
  gpuThermalViolation?: number | null;
}

export interface GpuSample {
  /** Seconds since the bench started. */
  t: number;
  gpu: number;
  utilization: number | null;
  memoryUtilization: number | null;
  memoryUsedBytes: number | null;
  powerWatts: number | null;
  powerViolation?: number | null;
  thermalViolation?: number | null;
  /** The GPU's energy since its first reading, joules: the daemon's counter over the power readings (collectors/gpu/energy.ts). */
  energyJoules?: number | null;
}

export interface EngineSample {
  t: number;
  kvCacheUsage: number | null;
  requestsRunning: number | null;
  requestsWaiting: number | null;
  /** The engine's counters, cumulative. */
  prefixCacheQueries: number | null;
  prefixCacheHits: number | null;
  preemptions?: number | null;
  /** Engine queue-time and prefill-time histograms, cumulative _sum and _count. */
  queueTime?: { sum: number; count: number } | null;
  prefillTime?: { sum: number; count: number } | null;
}

export interface StepReport {
  /** `replay`: the requests of workload traces at their recorded times (`bench --replay`). */
  mode: 'rate' | 'concurrency' | 'replay';
  /** Offered request rate (req/s), concurrency, or the replay's speed factor (--replay-speed). */
  load: number;
  arrivals: 'poisson' | 'constant' | 'trace' | null;
  durationSeconds: number;
  /** Seconds since the bench started, for lining up the resource samples. */
  startedAt: number;
  summary: PhaseSummary;
  resources: ResourceSummary;
  requests: RequestSample[];
  /** What limited the step (src/metrics/bottleneck/ over the step's figures; bench/analysis.ts). */
  analysis?: BottleneckVerdict;
  /** The GPUs' energy over the step and per output token (energy.ts); null: no GPU reported power. Absent in reports written before it. */
  energy?: StepEnergy | null;
}

export interface StepEnergy {
  /** Every GPU's energy over the step (first send to last finish), joules. */
  joules: number;
  /** The GPUs that reported power, each for the whole step: the GPU time that --gpu-hour-cost prices. */
  gpus: number;
  gpuSeconds: number;
  /** Output tokens of every request of the step (a partial stream's too: the GPU made them). */
  outputTokens: number;
  /** Output tokens of ok requests that met every SLO; null without SLOs. */
  goodOutputTokens: number | null;
  joulesPerOutputToken: number | null;
  joulesPerGoodOutputToken: number | null;
  /** Energy at --energy-price plus GPU time at --gpu-hour-cost, per million output tokens; null: no price. */
  costPerMillionOutputTokens: number | null;
  /** What the cost is in; null with no price. */
  currency: string | null;
}


export interface BenchReport {
  schemaVersion: number;
  partial: boolean;
  partialReason: string | null;
  environment: Record<string, unknown>;
  config: Record<string, unknown>;
  definitions: Record<string, string>;
  warmup: { requests: number; ok: number };
  singleStream: { startedAt: number; summary: PhaseSummary; resources: ResourceSummary; requests: RequestSample[] } | null;
  steps: StepReport[];
  /** `bench --replay`: the traces replayed and the recorded run beside the replayed one (absent otherwise). */
  replay?: ReplayReport;
  monitor: { intervalSeconds: number; gpu: GpuSample[]; engine: EngineSample[]; gpuError: string | null; engineError: string | null };
}

export function toSample(r: RequestResult, start: number, aborted: boolean): RequestSample {
  return {
    index: r.index, start, outcome: outcomeOf(r, aborted), status: r.status, error: r.error,
    ttft: r.ttft, tpot: r.tpot, e2e: r.e2e, outputTokens: r.outputTokens, promptTokens: r.promptTokens, chunks: r.chunks,
  };
}

/** The proxy's outcome for what the client saw. */
export function outcomeOf(r: Pick<RequestResult, 'ok' | 'status' | 'error'>, aborted: boolean): Outcome {
  if (r.ok) return 'ok';
  if (aborted) return 'client_abort';
  if (r.status >= 400) return 'upstream_error';
  if (r.error === 'stream error event') return 'stream_error';
  if (/timeout/i.test(r.error ?? '')) return 'upstream_timeout';
  if (r.status === 0) return 'upstream_unreachable';
  return 'stream_error'; // the body broke off after a 2xx
}

const SLO_VALUE: Record<BenchSlo, (s: RequestSample) => number | null> = { ttft: (s) => s.ttft, tpot: (s) => s.tpot, e2e: (s) => s.e2e };

/**
 * Judged as the proxy judges (src/slo/judge.ts): a failed request is bad on every SLO, a
 * client abort is not judged, a value not observable (TPOT of a 1-token reply) is skipped.
 */
export function judgeSample(s: RequestSample, slo: Thresholds): Map<BenchSlo, boolean> {
  const out = new Map<BenchSlo, boolean>();
  if (s.outcome === 'client_abort') return out;
  for (const name of BENCH_SLOS) {
    const limit = slo[name];
    if (limit === undefined) continue;
    if (s.outcome !== 'ok') {
      out.set(name, false);
      continue;
    }
    const v = SLO_VALUE[name](s);
    if (v !== null) out.set(name, v <= limit);
  }
  return out;
}

/** Goodput's test: an ok request good on every SLO judged (none judged: not good). */
export function meetsEverySlo(s: RequestSample, slo: Thresholds): boolean {
  return meets(s, judgeSample(s, slo));
}

function meets(s: RequestSample, verdicts: ReadonlyMap<BenchSlo, boolean>): boolean {
  return s.outcome === 'ok' && verdicts.size > 0 && [...verdicts.values()].every(Boolean);
}

export function summarizePhase(samples: readonly RequestSample[], seconds: number, slo: Thresholds, maxTokens: number): PhaseSummary {
  const ok = samples.filter((s) => s.outcome === 'ok');
  const errors: Partial<Record<Outcome, number>> = {};
  for (const s of samples) if (s.outcome !== 'ok') errors[s.outcome] = (errors[s.outcome] ?? 0) + 1;
  const per = (n: number) => (seconds > 0 ? n / seconds : 0);
  const hasSlo = BENCH_SLOS.some((n) => slo[n] !== undefined);
  const sloResults: Partial<Record<BenchSlo, SloResult>> = {};
  for (const name of BENCH_SLOS) if (slo[name] !== undefined) sloResults[name] = { threshold: slo[name]!, good: 0, judged: 0, attainment: null };
  let good = 0;
  for (const s of samples) {
    const verdicts = judgeSample(s, slo);
    for (const [name, isGood] of verdicts) {
      const r = sloResults[name]!;
      r.judged++;
      if (isGood) r.good++;
    }
    if (meets(s, verdicts)) good++;
  }
  for (const r of Object.values(sloResults)) r.attainment = r.judged > 0 ? r.good / r.judged : null;
  const tpots = ok.map((s) => s.tpot).filter((v): v is number => v !== null);
  return {
    requests: samples.length,
    ok: ok.length,
    errors,
    seconds,
    requestsPerSecond: per(ok.length),
    outputTokensPerSecond: per(ok.reduce((a, s) => a + s.outputTokens, 0)),
    outputLengthMatched: ok.filter((s) => s.outputTokens === maxTokens).length,
    ttft: distribution(ok.map((s) => s.ttft).filter((v): v is number => v !== null)),
    tpot: distribution(tpots),
    e2e: distribution(ok.map((s) => s.e2e)),
    generationRate: distribution(tpots.filter((t) => t > 0).map((t) => 1 / t)),
    outputTokens: distribution(ok.map((s) => s.outputTokens)),
    promptTokens: distribution(ok.map((s) => s.promptTokens).filter((v): v is number => v !== null)),
    goodput: hasSlo ? per(good) : null,
    goodRequests: hasSlo ? good : null,
    slo: sloResults,
  };
}

/**
 * @param before the last engine sample before the phase, as the baseline of the counters.
 */
export function summarizeResources(gpu: readonly GpuSample[], engine: readonly EngineSample[], before: EngineSample | null = null): ResourceSummary {
  const g = (f: (s: GpuSample) => number | null) => gaugeSummary(gpu.map(f).filter((v): v is number => v !== null));
  const e = (f: (s: EngineSample) => number | null) => gaugeSummary(engine.map(f).filter((v): v is number => v !== null));
  return {
    gpuUtilization: g((s) => s.utilization),
    gpuMemoryUtilization: g((s) => s.memoryUtilization),
    gpuMemoryUsedBytes: g((s) => s.memoryUsedBytes),
    gpuPowerWatts: g((s) => s.powerWatts),
    kvCacheUsage: e((s) => s.kvCacheUsage),
    requestsRunning: e((s) => s.requestsRunning),
    requestsWaiting: e((s) => s.requestsWaiting),
    prefixCacheHitRatio: hitRatio(before ? [before, ...engine] : engine),
    ...engineRates(before ? [before, ...engine] : engine),
    ...violations(gpu),
  };
}

/** Counter and histogram increases from the first to the last engine sample that has them. */
function engineRates(engine: readonly EngineSample[]): Pick<ResourceSummary, 'preemptionsPerSecond' | 'queueTimeMean' | 'prefillTimeMean'> {
  const span = <T>(f: (s: EngineSample) => T | null | undefined): [EngineSample, EngineSample] | null => {
    const known = engine.filter((s) => f(s) !== null && f(s) !== undefined);
    return known.length >= 2 ? [known[0]!, known[known.length - 1]!] : null;
  };
  const p = span((s) => s.preemptions);
  const phase = (f: (s: EngineSample) => { sum: number; count: number } | null | undefined): number | null => {
    const sp = span(f);
    if (!sp) return null;
    const n = f(sp[1])!.count - f(sp[0])!.count;
    return n > 0 ? (f(sp[1])!.sum - f(sp[0])!.sum) / n : null;
  };
  return {
    preemptionsPerSecond: p && p[1].t > p[0].t ? Math.max(0, p[1].preemptions! - p[0].preemptions!) / (p[1].t - p[0].t) : null,
    queueTimeMean: phase((s) => s.queueTime),
    prefillTimeMean: phase((s) => s.prefillTime),
  };
}

function violations(gpu: readonly GpuSample[]): Pick<ResourceSummary, 'gpuPowerViolation' | 'gpuThermalViolation'> {
  const worst = (f: (s: GpuSample) => number | null | undefined): number | null => {
    const by = new Map<number, number[]>();
    for (const s of gpu) {
      const v = f(s);
      if (v === null || v === undefined) continue;
      by.set(s.gpu, [...(by.get(s.gpu) ?? []), v]);
    }
    const means = [...by.values()].map((xs) => xs.reduce((a, b) => a + b, 0) / xs.length);
    return means.length ? Math.max(...means) : null;
  };
  return { gpuPowerViolation: worst((s) => s.powerViolation), gpuThermalViolation: worst((s) => s.thermalViolation) };
}

function hitRatio(engine: readonly EngineSample[]): number | null {
  const known = engine.filter((s) => s.prefixCacheHits !== null && s.prefixCacheQueries !== null);
  if (known.length < 2) return null;
  const first = known[0]!;
  const last = known[known.length - 1]!;
  const queries = last.prefixCacheQueries! - first.prefixCacheQueries!;
  return queries > 0 ? Math.max(0, last.prefixCacheHits! - first.prefixCacheHits!) / queries : null;
}
