/**
 * The signals a bottleneck verdict is decided from: one snapshot per model, every value in
 * a base unit and over a stated window, null where the source does not say (no engine
 * metrics, no GPU, no SLO). The metrics side builds it from request records and collector
 * gauges (live.ts); `infermeter bench` builds it from one load step (bench/analysis.ts).
 * The table below is the documentation: docs/bottleneck.md prints it.
 */
import { UPSTREAM_FAILURES } from '../../record/record.js';

export const SIGNAL_NAMES = [
  'requests', 'requestsPerSecond', 'failureRatio',
  'ttftP50', 'ttftP99', 'ttftOverTarget', 'tpotP50', 'tpotOverTarget', 'latencyOverTarget', 'tpotFloor', 'tpotGrowth', 'sloAttainment',
  'engineWaiting', 'engineRunning', 'kvCacheUsage', 'kvCacheUsageMax', 'preemptionsPerSecond', 'queueTimeMean', 'queueShare', 'prefillShare',
  'gpuUtilization', 'gpuPowerViolation', 'gpuThermalViolation', 'gpuSmClockRatio', 'gpuDramActive',
  'proxyLoopDelayP99', 'proxyLagShare', 'loadVsBenchLimit',
  'prefixReuseTraffic', 'prefixReuseEngineSize', 'prefixReuseDelivered',
] as const;
export type SignalName = (typeof SIGNAL_NAMES)[number];

/** A snapshot: a value per signal (null: not measured), and how some were obtained. */
export interface Signals {
  values: Record<SignalName, number | null>;
  /** Where a signal came from when an engine lacked the preferred source (shown in the evidence). */
  basis: Partial<Record<SignalName, string>>;
  /** The window the windowed signals cover, seconds. */
  windowSeconds: number;
  /** The engine kind (for advice), e.g. vllm. */
  engine: string;
  /** The prefix-cache model's reading of the model (--prefix-cache); null or absent: it is off, or the reader is bench. */
  prefix?: PrefixReading | null;
}

/**
 * What the prefix-cache model (metrics/prefix/) says of one model, as the bottleneck verdict
 * reads it: its three shares become the prefix* signals, and where prefill is the bottleneck
 * its verdict's knob leads the advice (rules.ts, `prefixFirst`).
 */
export interface PrefixReading {
  /** --prefix-cache-window, seconds: the window of the three shares. */
  windowSeconds: number;
  traffic: number | null;
  engineSize: number | null;
  delivered: number | null;
  /** Where `delivered` came from, in words; null: not known. */
  deliveredFrom: string | null;
  /** Share of the model's requests hashed (below 1: sampled or shed under load). */
  keptShare: number;
  /** The prefix-cache verdict; null: too few requests in its window yet. */
  verdict: { kind: string; summary: string; advice: Readonly<Record<string, string>> } | null;
}

export interface SignalInfo {
  unit: string;
  /** "window": over the signal window; "now": the latest reading; "life": since the judge started; "prefix": over --prefix-cache-window. */
  span: 'window' | 'now' | 'life' | 'prefix';
  what: string;
}

export const SIGNALS: Record<SignalName, SignalInfo> = {
  requests: { unit: 'requests', span: 'window', what: 'finished generation requests of the model (client aborts excluded)' },
  requestsPerSecond: { unit: 'req/s', span: 'window', what: 'finished requests per second' },
  failureRatio: { unit: 'ratio', span: 'window', what: `${UPSTREAM_FAILURES.slice(0, -1).join(', ')} and ${UPSTREAM_FAILURES.at(-1)} outcomes / finished requests` },
  ttftP50: { unit: 's', span: 'window', what: 'TTFT median (proxy-measured, ok streams)' },
  ttftP99: { unit: 's', span: 'window', what: 'TTFT 99th percentile' },
  ttftOverTarget: { unit: 'ratio', span: 'window', what: 'TTFT P99 / the TTFT SLO threshold (the fallback target when no TTFT SLO is set); 1 or more: latency is off' },
  tpotP50: { unit: 's', span: 'window', what: 'TPOT median (proxy-measured)' },
  tpotOverTarget: { unit: 'ratio', span: 'window', what: 'TPOT P99 / the TPOT SLO threshold (or the fallback target)' },
  latencyOverTarget: { unit: 'ratio', span: 'window', what: 'the larger of ttftOverTarget and tpotOverTarget' },
  tpotFloor: { unit: 's', span: 'life', what: 'the lowest windowed TPOT median seen at low concurrency (bench: the single-stream median): what one sequence alone costs' },
  tpotGrowth: { unit: 'ratio', span: 'window', what: 'TPOT median / TPOT floor: how much the batch slows each token' },
  sloAttainment: { unit: 'ratio', span: 'window', what: 'the worst SLO attainment (good / judged) of the model; null without SLOs' },
  engineWaiting: { unit: 'requests', span: 'window', what: 'mean requests waiting in the engine queue (infermeter_engine_requests_waiting)' },
  engineRunning: { unit: 'requests', span: 'window', what: 'mean requests in the running batch (infermeter_engine_requests_running)' },
  kvCacheUsage: { unit: 'ratio', span: 'window', what: 'mean KV-cache usage (infermeter_engine_kv_cache_usage_ratio)' },
  kvCacheUsageMax: { unit: 'ratio', span: 'window', what: 'highest KV-cache usage read' },
  preemptionsPerSecond: { unit: '1/s', span: 'window', what: 'engine preemptions per second (increase of infermeter_engine_preemptions_total)' },
  queueTimeMean: { unit: 's', span: 'window', what: 'mean engine queue time (infermeter_engine_queue_time_seconds _sum/_count increase)' },
  queueShare: { unit: 'ratio', span: 'window', what: 'mean engine queue time / mean TTFT' },
  prefillShare: { unit: 'ratio', span: 'window', what: 'mean engine prefill time / mean TTFT (fallback: 1 - queueShare, when the engine exports a queue histogram but no prefill one)' },
  gpuUtilization: { unit: 'ratio', span: 'window', what: 'mean GPU (SM) utilization over GPUs (infermeter_gpu_sm_utilization_ratio)' },
  gpuPowerViolation: { unit: 'ratio', span: 'window', what: 'worst GPU\'s mean share of time throttled by its power limit (infermeter_gpu_power_violation_ratio)' },
  gpuThermalViolation: { unit: 'ratio', span: 'window', what: 'worst GPU\'s share of readings thermally throttled (infermeter_gpu_thermal_violation)' },
  gpuSmClockRatio: { unit: 'ratio', span: 'window', what: 'lowest GPU\'s mean SM clock / the highest SM clock that GPU reached while busy' },
  gpuDramActive: { unit: 'ratio', span: 'window', what: 'mean DRAM bandwidth utilization over GPUs (GPM/DCGM; null without)' },
  proxyLoopDelayP99: { unit: 's', span: 'window', what: 'mean of the proxy event-loop delay P99 readings, worst loop (infermeter_proxy_event_loop_delay_seconds{stat="p99"}): a sustained lag, not one stall' },
  loadVsBenchLimit: { unit: 'ratio', span: 'window', what: 'requestsPerSecond / the req/s where the --bottleneck-bench report saw the SLO break: how much of that load is in use (null without the flag, or when no step broke)' },
  proxyLagShare: { unit: 'ratio', span: 'window', what: 'proxyLoopDelayP99 / TTFT median: how much of what clients wait for the first token the proxy\'s own loop could account for' },
  prefixReuseTraffic: { unit: 'ratio', span: 'prefix', what: 'share of prompt tokens an unbounded prefix cache would have found cached: the reuse the traffic holds (--prefix-cache; docs/prefix-cache.md)' },
  prefixReuseEngineSize: { unit: 'ratio', span: 'prefix', what: 'the same through a modelled cache of the engine\'s own KV size, as the requests were routed (--prefix-cache)' },
  prefixReuseDelivered: { unit: 'ratio', span: 'prefix', what: 'share of prompt tokens the engine served from its prefix cache: usage cached_tokens, else its prefix-cache counters (--prefix-cache)' },
};

export function emptySignals(windowSeconds: number, engine: string): Signals {
  const values = {} as Record<SignalName, number | null>;
  for (const n of SIGNAL_NAMES) values[n] = null;
  return { values, basis: {}, windowSeconds, engine };
}

/** Values of a sample list: exact order statistic (the smallest value with at least q of them at or below it). */
export function quantile(sorted: readonly number[], q: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

export function mean(xs: readonly number[]): number | null {
  return xs.length === 0 ? null : xs.reduce((a, b) => a + b, 0) / xs.length;
}

export function ratio(a: number | null, b: number | null): number | null {
  return a === null || b === null || !(b > 0) ? null : a / b;
}
