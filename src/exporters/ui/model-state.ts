/**
 * One model's recent history for the status page, in fixed rings (ring.ts), fed from the
 * same request records the exporters record: the same measurement, never a second one.
 *
 * - `chart`: 15 minutes at 1 s: requests, output tokens and the latency percentiles of the
 *   trailing PERCENTILE_SECONDS, computed when each second closes;
 * - `recent`: the last NOW_SECONDS at 1 s: counts and exact sums (means, rates);
 * - `samples`: raw TTFT/TPOT/E2E observations of the last NOW_SECONDS (capped per second);
 * - `coarse`: 1 hour at 10 s: outcomes and SLO verdicts (burn rates over 5 m and 1 h).
 */
import { OUTCOMES, tpotSeconds, type RequestRecord } from '../../record/record.js';
import { SLO_NAMES, type SloName } from '../../slo/config.js';
import type { Verdict } from '../../slo/judge.js';
import { Ring, SampleRing } from './ring.js';

export const CHART_SECONDS = 900;
export const NOW_SECONDS = 60;
export const RATE_SECONDS = 10;
export const PERCENTILE_SECONDS = 10;
export const COARSE_SLOT_SECONDS = 10;
export const COARSE_SLOTS = 360;
/** Raw observations kept per second and measurement before sampling starts. */
export const SAMPLES_PER_SECOND = 32;
export const QUANTILES = [0.5, 0.95, 0.99] as const;

export const LATENCIES = ['ttft', 'tpot', 'e2e'] as const;
export type Latency = (typeof LATENCIES)[number];

/** chart fields: 0 requests, 1 output tokens, then 3 quantiles per latency. */
const C_REQUESTS = 0;
const C_OUTPUT = 1;
const C_Q = 2;
/** recent fields. */
const R_REQUESTS = 0;
const R_OUTPUT = 1;
const R_INPUT = 2;
const R_BUSY = 3; // seconds of E2E of requests finished: their time-average concurrency
const R_SUM = 4; // then sum, count per latency
/** coarse fields: one per outcome, then good and bad per SLO name. */
const K_SLO = OUTCOMES.length;

export interface LatencyStats {
  p50: number | null;
  p95: number | null;
  p99: number | null;
  mean: number | null;
  count: number;
}

export class ModelState {
  readonly chart = new Ring(CHART_SECONDS, C_Q + LATENCIES.length * QUANTILES.length, (n) => new Float32Array(n), NaN);
  readonly recent = new Ring(NOW_SECONDS, R_SUM + LATENCIES.length * 2, (n) => new Float64Array(n));
  readonly coarse = new Ring(COARSE_SLOTS, K_SLO + SLO_NAMES.length * 2, (n) => new Uint32Array(n));
  private readonly samples: Record<Latency, SampleRing>;
  /** Unix ms of the last record. */
  lastSeen = 0;

  constructor(random: () => number = Math.random) {
    this.samples = {
      ttft: new SampleRing(NOW_SECONDS, SAMPLES_PER_SECOND, random),
      tpot: new SampleRing(NOW_SECONDS, SAMPLES_PER_SECOND, random),
      e2e: new SampleRing(NOW_SECONDS, SAMPLES_PER_SECOND, random),
    };
  }

  /** One finished request at `nowMs` (when the metrics side got it), with its SLO verdicts. */
  record(r: RequestRecord, verdicts: readonly Verdict[] | null, nowMs: number): void {
    this.lastSeen = nowMs;
    const s = Math.floor(nowMs / 1000);
    this.chart.add(s, C_REQUESTS, 0); // moves the ring; chart counts are copied in at close
    this.recent.add(s, R_REQUESTS, 1);
    if (r.outputTokens > 0) this.recent.add(s, R_OUTPUT, r.outputTokens);
    if (r.inputTokens > 0) this.recent.add(s, R_INPUT, r.inputTokens);
    if (r.e2e > 0) this.recent.add(s, R_BUSY, r.e2e);
    // As the histograms (prometheus.ts): latencies of ok, metered requests only.
    if (r.outcome === 'ok' && !r.meteringFailure) {
      this.observe('ttft', s, r.ttft);
      this.observe('tpot', s, tpotSeconds(r));
      this.observe('e2e', s, r.e2e);
    }
    const c = Math.floor(nowMs / (COARSE_SLOT_SECONDS * 1000));
    this.coarse.add(c, OUTCOMES.indexOf(r.outcome), 1);
    for (const v of verdicts ?? []) this.coarse.add(c, K_SLO + SLO_NAMES.indexOf(v.name) * 2 + (v.good ? 0 : 1), 1);
  }

  private observe(l: Latency, s: number, v: number): void {
    if (v < 0) return;
    const i = LATENCIES.indexOf(l);
    this.recent.add(s, R_SUM + i * 2, v);
    this.recent.add(s, R_SUM + i * 2 + 1, 1);
    this.samples[l].observe(s, v);
  }

  /** Second `s` has ended: its chart point (counts, and percentiles of the trailing window). */
  close(s: number): void {
    this.chart.set(s, C_REQUESTS, this.recent.get(s, R_REQUESTS));
    this.chart.set(s, C_OUTPUT, this.recent.get(s, R_OUTPUT));
    LATENCIES.forEach((l, i) => {
      const q = this.samples[l].quantiles(s - PERCENTILE_SECONDS + 1, s, QUANTILES);
      q.forEach((v, k) => this.chart.set(s, C_Q + i * QUANTILES.length + k, v));
    });
  }

  /** Requests, output and input tokens per second over the RATE_SECONDS ending at `s`. */
  rates(s: number): { requests: number; outputTokens: number; inputTokens: number; concurrency: number } {
    const from = s - RATE_SECONDS + 1;
    const per = (f: number) => this.recent.sum(f, from, s) / RATE_SECONDS;
    return { requests: per(R_REQUESTS), outputTokens: per(R_OUTPUT), inputTokens: per(R_INPUT), concurrency: per(R_BUSY) };
  }

  /** Percentiles (raw samples) and exact mean of one latency over the NOW_SECONDS ending at `s`. */
  latency(l: Latency, s: number): LatencyStats {
    const from = s - NOW_SECONDS + 1;
    const i = LATENCIES.indexOf(l);
    const count = this.recent.sum(R_SUM + i * 2 + 1, from, s);
    if (count === 0) return { p50: null, p95: null, p99: null, mean: null, count: 0 };
    const [p50, p95, p99] = this.samples[l].quantiles(from, s, QUANTILES);
    return { p50: p50!, p95: p95!, p99: p99!, mean: this.recent.sum(R_SUM + i * 2, from, s) / count, count };
  }

  /** Outcome counts over the last `seconds` (coarse slots ending with the one holding `nowMs`). */
  outcomes(nowMs: number, seconds: number): Partial<Record<(typeof OUTCOMES)[number], number>> {
    const [from, to] = coarseRange(nowMs, seconds);
    const out: Partial<Record<(typeof OUTCOMES)[number], number>> = {};
    OUTCOMES.forEach((o, i) => {
      const n = this.coarse.sum(i, from, to);
      if (n > 0) out[o] = n;
    });
    return out;
  }

  /** Good and bad verdicts of one SLO over the last `seconds`. */
  verdicts(slo: SloName, nowMs: number, seconds: number): { good: number; bad: number } {
    const [from, to] = coarseRange(nowMs, seconds);
    const k = K_SLO + SLO_NAMES.indexOf(slo) * 2;
    return { good: this.coarse.sum(k, from, to), bad: this.coarse.sum(k + 1, from, to) };
  }

  /** One chart field over seconds [from, to] (NaN where no value). */
  chartField(field: 'requests' | 'outputTokens' | `${Latency}.${'p50' | 'p95' | 'p99'}`, from: number, to: number): number[] {
    let f: number;
    if (field === 'requests') f = C_REQUESTS;
    else if (field === 'outputTokens') f = C_OUTPUT;
    else {
      const [l, q] = field.split('.') as [Latency, string];
      f = C_Q + LATENCIES.indexOf(l) * QUANTILES.length + ['p50', 'p95', 'p99'].indexOf(q);
    }
    const out: number[] = [];
    for (let s = from; s <= to; s++) out.push(this.chart.get(s, f));
    return out;
  }

  get bytes(): number {
    let n = this.chart.bytes + this.recent.bytes + this.coarse.bytes;
    for (const l of LATENCIES) n += this.samples[l].bytes;
    return n;
  }
}

/** Coarse slot numbers covering the last `seconds` up to `nowMs` (the current slot included). */
export function coarseRange(nowMs: number, seconds: number): [number, number] {
  const to = Math.floor(nowMs / (COARSE_SLOT_SECONDS * 1000));
  return [to - Math.ceil(seconds / COARSE_SLOT_SECONDS) + 1, to];
}
