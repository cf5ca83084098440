/**
 * The recorded run beside the replayed one, figure for figure: arrival rate, lengths, TTFT,
 * TPOT and E2E percentiles, SLO attainment, prefix-cache hits. The recorded side is read from
 * the trace's lines (its latencies exist only where infermeter recorded them: plain Mooncake
 * files have lengths and arrivals only); the replayed side from the bench's own samples and
 * the engine's counters. Both are judged with the same thresholds, as the proxy judges.
 */
import { OUTCOMES } from '../../record/record.js';
import { BENCH_SLOS, distribution, type BenchSlo } from '../stats.js';
import { summarizePhase, type Outcome, type RequestSample, type ResourceSummary } from '../report.js';
import type { CachedAgreement, LengthAgreement, ReplaySide } from './types.js';
import type { Thresholds } from '../../slo/config.js';
import type { Workload } from './workload.js';

const PROXY_OUTCOMES: readonly string[] = OUTCOMES;

/** A recorded outcome as a client-side one: infermeter's own refusals count as failed. */
function outcomeOf(recorded: string | null): Outcome {
  if (recorded === null || recorded === 'ok') return 'ok';
  if (recorded === 'client_abort') return 'client_abort';
  if (PROXY_OUTCOMES.includes(recorded) && recorded !== 'rejected' && recorded !== 'worker_lost') return recorded as Outcome;
  return 'upstream_error';
}

export function recordedSide(w: Workload, slo: Thresholds): ReplaySide {
  const samples: RequestSample[] = w.requests.map((r, index) => {
    const x = r.record;
    return {
      index, start: (r.atMs * w.speed) / 1000, outcome: outcomeOf(x.outcome), status: 0, error: null,
      ttft: x.ttftMs === null ? null : x.ttftMs / 1000, tpot: x.tpotMs === null ? null : x.tpotMs / 1000,
      e2e: x.e2eMs === null ? NaN : x.e2eMs / 1000, outputTokens: x.outputLength, promptTokens: x.inputLength, chunks: 0,
    };
  });
  const ok = samples.filter((s) => s.outcome === 'ok');
  // An SLO is judged only on what every ok line recorded: a Mooncake file from elsewhere has no latencies.
  const has: Record<BenchSlo, boolean> = {
    ttft: ok.length > 0 && ok.every((s) => s.ttft !== null || s.outputTokens === 0),
    tpot: ok.length > 0 && ok.every((s) => s.tpot !== null || s.outputTokens < 2),
    e2e: ok.length > 0 && ok.every((s) => Number.isFinite(s.e2e)),
  };
  const judged: Thresholds = {};
  for (const n of BENCH_SLOS) if (has[n] && slo[n] !== undefined) judged[n] = slo[n];
  const first = samples.length ? samples[0]!.start : 0;
  const finish = has.e2e ? samples.reduce((m, s) => Math.max(m, s.start + (Number.isFinite(s.e2e) ? s.e2e : 0)), 0) : null;
  const seconds = finish === null ? 0 : finish - first;
  const sum = summarizePhase(samples, seconds, judged, 0);
  // The replayed side counts every request (the engine's counters), so the recorded one is shown
  // only where every line carries its cached tokens: a share of some lines is another quantity.
  const cached = w.requests.filter((r) => r.record.cachedInputTokens !== null);
  const every = cached.length > 0 && cached.length === w.requests.length;
  const cachedInput = every ? cached.reduce((a, r) => a + r.record.inputLength, 0) : 0;
  return {
    requests: samples.length, ok: sum.ok,
    arrivalRate: rate(samples.map((s) => s.start)),
    requestsPerSecond: finish === null || !(seconds > 0) ? null : sum.requestsPerSecond,
    inputTokens: sum.promptTokens, outputTokens: sum.outputTokens,
    ttft: sum.ttft, tpot: sum.tpot, e2e: sum.e2e, slo: sum.slo,
    prefixCacheHitRatio: cachedInput > 0 ? cached.reduce((a, r) => a + r.record.cachedInputTokens!, 0) / cachedInput : null,
    prefixCacheFrom: cached.length === 0 ? null
      : every ? `cached_input_tokens of all ${samples.length} lines`
      : `cached_input_tokens on ${cached.length} of ${samples.length} lines only: not comparable; those both runs report are compared below`,
  };
}

export function replayedSide(samples: readonly RequestSample[], seconds: number, slo: Thresholds, resources: ResourceSummary): ReplaySide {
  const sum = summarizePhase(samples, seconds, slo, 0);
  const withCached = samples.filter((s) => s.outcome === 'ok' && s.replay?.cachedTokens !== null && s.replay?.cachedTokens !== undefined && s.promptTokens !== null);
  const prompt = withCached.reduce((a, s) => a + s.promptTokens!, 0);
  const fromUsage = prompt > 0 ? withCached.reduce((a, s) => a + s.replay!.cachedTokens!, 0) / prompt : null;
  const engine = resources.prefixCacheHitRatio;
  return {
    requests: sum.requests, ok: sum.ok,
    arrivalRate: rate(samples.map((s) => s.start)),
    requestsPerSecond: sum.requestsPerSecond,
    inputTokens: sum.promptTokens, outputTokens: sum.outputTokens,
    ttft: sum.ttft, tpot: sum.tpot, e2e: sum.e2e, slo: sum.slo,
    prefixCacheHitRatio: engine ?? fromUsage,
    prefixCacheFrom: engine !== null ? 'the engine\'s prefix-cache counters over the replay' : fromUsage !== null ? `usage cached tokens of ${withCached.length} requests` : null,
  };
}

/** Per request, the replayed length against the recorded one. */
export function lengthAgreement(samples: readonly RequestSample[], which: 'input' | 'output'): LengthAgreement {
  const pairs = samples
    .filter((s) => s.outcome === 'ok' && s.replay && (which === 'output' || s.promptTokens !== null))
    .map((s) => which === 'input' ? [s.promptTokens!, s.replay!.inputLength] as const : [s.outputTokens, Math.max(1, s.replay!.outputLength)] as const);
  return {
    compared: pairs.length,
    exact: pairs.filter(([a, b]) => a === b).length,
    tokens: distribution(pairs.map(([a, b]) => a - b)),
    relative: distribution(pairs.map(([a, b]) => (a - b) / b)),
  };
}

export function cachedAgreement(samples: readonly RequestSample[]): CachedAgreement {
  const both = samples.filter((s) => s.outcome === 'ok' && s.replay && s.replay.cachedTokens !== null && s.replay.recordedCachedTokens !== null);
  const sum = (f: (s: RequestSample) => number) => both.reduce((a, s) => a + f(s), 0);
  return {
    compared: both.length,
    promptTokens: sum((s) => s.replay!.inputLength),
    recorded: sum((s) => s.replay!.recordedCachedTokens!),
    replayed: sum((s) => s.replay!.cachedTokens!),
    exact: both.filter((s) => s.replay!.cachedTokens === s.replay!.recordedCachedTokens).length,
  };
}

function rate(starts: readonly number[]): number | null {
  if (starts.length < 2) return null;
  // A reduce, not Math.max(...starts): a trace can have more lines than a call has arguments.
  const span = starts.reduce((m, x) => Math.max(m, x), -Infinity) - starts.reduce((m, x) => Math.min(m, x), Infinity);
  return span > 0 ? (starts.length - 1) / span : null;
}
