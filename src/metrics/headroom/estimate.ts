/**
 * The headroom estimate of one model (docs/headroom.md): the request rate at which the first
 * of its P99 SLOs (TTFT, TPOT, E2E) would break at the current mix, the SLO that breaks
 * first and the limit behind it, or `unknown` with the reason when the observations cannot
 * support a figure. Pure: an observation window and a few engine figures in, a verdict out.
 *
 * Today's requests are carried to a rate k times today's, each keeping its own lengths:
 * - the decode batch grows by Little's law, each request's TPOT follows the fitted line at
 *   its grown batch (its residual kept), and the batch stops at the slot limit; where TPOT
 *   also rises with the share of the decode spent beside a prompt in prefill (chunked
 *   prefill: the prompt's chunk runs in the decode step), that share grows with the prefill
 *   line's load, and the line's batch slope is fitted net of it;
 * - each TTFT keeps its own service, stretched as the engine step lengthens, and adds the
 *   growth of the prefill line's wait and of the batch slots' wait (queue.ts), at the same
 *   quantile its observed wait had;
 * - E2E is that TTFT plus the grown decode.
 * The capacity is the k where the first P99 reaches its threshold (bisection: every part
 * grows with k), times today's rate.
 */
import { Draws, multiServerWaits, singleServerWaits, waitAt, type Waits } from './queue.js';
import { meanOf, medianLine, quantileOf, type Observation, type Observed } from './observe.js';
import { prefillWork, tpotFit, type TpotFit } from './fit.js';

export const CAPACITY_SLOS = ['ttft', 'tpot', 'e2e'] as const;
export type CapacitySlo = (typeof CAPACITY_SLOS)[number];
/** The limits a capacity can be bound by, in the bottleneck verdict's words (docs/bottleneck.md). */
export const CAPACITY_LIMITS = ['decode', 'prefill', 'queue', 'kv_cache'] as const;
export type CapacityLimit = (typeof CAPACITY_LIMITS)[number];
export const UNKNOWN_REASONS = ['no_slo', 'no_load', 'too_few_requests', 'load_not_varied', 'beyond_reach', 'below_served'] as const;
export type UnknownReason = (typeof UNKNOWN_REASONS)[number];

/** Fewest usable requests a fit is made from. */
export const MIN_REQUESTS = 30;
/** The estimate is given up to this many times today's rate: further is extrapolation past what was seen. */
export const MAX_SCALE = 6;
/**
 * The decode batch must have spread at least this much (10th to 90th percentile), in
 * sequences (each request's batch is a mean over its decode, so fractions are real
 * variation: two slots of short decodes spread from 1 to about 1.6)...
 */
const MIN_BATCH_SPREAD = 0.5;
/** ...and this share of its median. */
const MIN_BATCH_SPREAD_SHARE = 0.15;

export type Thresholds = Partial<Record<CapacitySlo, number>>;

/** The engine's side: where the batch stops growing. */
export interface BatchLimits {
  /** Running requests at most (--max-num-seqs, llama.cpp's slots), seen as the largest batch while requests waited with KV room; null: not seen. */
  slots: number | null;
  /** Sequences the KV cache holds at today's mix: mean running / mean KV usage; null without engine KV figures. */
  kvSequences: number | null;
}

export interface EstimateInput {
  observation: Observation;
  /** Today's finished generation requests per second. */
  requestsPerSecond: number;
  thresholds: Thresholds;
  /** The SLO objective: P99 for 0.99. */
  objective: number;
  limits: BatchLimits;
}

export interface CapacityEvidence {
  name: string;
  value: number | null;
  unit: string;
  basis?: string;
}

export interface CapacityEstimate {
  state: 'estimate' | 'unknown';
  /** The rate where the first SLO would break; null when unknown. */
  requestsPerSecond: number | null;
  /** Today's rate over that capacity; null when unknown. */
  loadRatio: number | null;
  bindingSlo: CapacitySlo | null;
  bindingLimit: CapacityLimit | null;
  reason: UnknownReason | null;
  summary: string;
  evidence: CapacityEvidence[];
}

/** Percentiles of each SLO's latency at one load; null: the engine cannot keep up there. */
interface Prediction {
  values: Record<CapacitySlo, number>;
  /** TTFT's percentile with only one cause of growth applied, for naming the limit. */
  parts: { step: number; prefill: number; slots: number };
  /** The mean growth of TPOT from today's: from the batch, and from decoding beside prompts in prefill. */
  tpotGrowth: { batch: number; prefill: number };
}

const round = (v: number) => Number(v.toPrecision(4));

export function unknown(reason: UnknownReason, summary: string, evidence: CapacityEvidence[] = []): CapacityEstimate {
  return { state: 'unknown', requestsPerSecond: null, loadRatio: null, bindingSlo: null, bindingLimit: null, reason, summary, evidence };
}

export function estimateCapacity(input: EstimateInput, draws = new Draws()): CapacityEstimate {
  const slos = CAPACITY_SLOS.filter((s) => input.thresholds[s] !== undefined && input.thresholds[s]! > 0);
  const rate = input.requestsPerSecond;
  const obs = input.observation;
  if (slos.length === 0) return unknown('no_slo', 'no TTFT, TPOT or E2E SLO is set for this model: there is no threshold to break');
  if (!(rate > 0) || obs.usable.length === 0) return unknown('no_load', 'no requests finished in the window: no load to scale');
  const decoding = obs.usable.filter((o) => o.tpot !== null);
  if (obs.usable.length < MIN_REQUESTS || decoding.length < MIN_REQUESTS) {
    return unknown('too_few_requests', `${decoding.length} usable streamed requests in the window, ${MIN_REQUESTS} needed to fit the model`, [{ name: 'requests', value: obs.usable.length, unit: 'requests' }]);
  }
  const batches = decoding.map((o) => o.batch);
  const p10 = quantileOf(batches, 0.1)!;
  const p90 = quantileOf(batches, 0.9)!;
  const median = quantileOf(batches, 0.5)!;
  if (p90 - p10 < Math.max(MIN_BATCH_SPREAD, MIN_BATCH_SPREAD_SHARE * median)) {
    return unknown('load_not_varied', `the decode batch stayed between ${round(p10)} and ${round(p90)} sequences: too little load variation to tell how TPOT grows with it`,
      [{ name: 'batchP10', value: round(p10), unit: 'sequences' }, { name: 'batchP90', value: round(p90), unit: 'sequences' }]);
  }
  const line = medianLine(batches, decoding.map((o) => o.tpot!));
  if (line === null) return unknown('load_not_varied', 'every request decoded in the same batch: too little load variation to tell how TPOT grows with it');
  const model = new Model(input, tpotFit(decoding, line), draws);
  const f = (k: number) => {
    const p = model.at(k);
    return p === null ? Infinity : Math.max(...slos.map((s) => p.values[s] / input.thresholds[s]!));
  };
  let lo: number;
  let hi: number;
  if (f(1) < 1) {
    if (f(MAX_SCALE) < 1) return unknown('beyond_reach', `no SLO would break below ${MAX_SCALE}× today's load (the window's mean ${round(rate)} req/s; ${round(rate * MAX_SCALE)} req/s): too far past what was seen to give a figure`, model.evidence());
    [lo, hi] = [1, MAX_SCALE];
  } else {
    // The model says an SLO breaks below today's load. If today's load meets every SLO, the model
    // is wrong about this window (a limit misread, a fit off its data): no figure below the rate
    // being served within its SLOs is ever published.
    const served = observedWithin(obs.usable, slos, input.thresholds, input.objective);
    if (served !== null) {
      return unknown('below_served', `the model puts the break below today's ${round(rate)} req/s, which every P${Math.round(input.objective * 100)} SLO meets (${served}): no figure below the rate being served`, model.evidence());
    }
    [lo, hi] = [1 / MAX_SCALE, 1];
  }
  if (f(lo) >= 1) return unknown('beyond_reach', `the SLOs are broken even at 1/${MAX_SCALE} of today's load (the window's mean ${round(rate)} req/s)`, model.evidence());
  while (hi / lo > 1.002) {
    const mid = Math.sqrt(lo * hi);
    if (f(mid) < 1) lo = mid;
    else hi = mid;
  }
  const at = model.evaluate(hi);
  const bindingSlo = typeof at === 'string' ? saturatedSlo(slos, at) : slos.reduce((a, b) => (at.values[b] / input.thresholds[b]! > at.values[a] / input.thresholds[a]! ? b : a));
  const capacity = lo * rate;
  const bindingLimit = model.limitOf(bindingSlo, at);
  return {
    state: 'estimate', requestsPerSecond: round(capacity), loadRatio: round(rate / capacity), bindingSlo, bindingLimit, reason: null,
    summary: `${bindingSlo.toUpperCase()} P${Math.round(input.objective * 100)} would reach ${input.thresholds[bindingSlo]} s at ${round(capacity)} req/s (${round(capacity / rate)}× today's load, the window's mean ${round(rate)} req/s); the ${bindingLimit} limit binds`,
    evidence: model.evidence(typeof at === 'string' ? null : at, bindingSlo, input.thresholds[bindingSlo]!),
  };
}

/** Every SLO's observed quantile within its threshold: a summary (`ttft 0.24/2 s, …`); null when one is not. */
function observedWithin(usable: readonly Observed[], slos: readonly CapacitySlo[], thresholds: Thresholds, objective: number): string | null {
  const values: Record<CapacitySlo, number[]> = { ttft: [], tpot: [], e2e: [] };
  for (const o of usable) {
    values.ttft.push(o.ttft);
    if (o.tpot !== null) values.tpot.push(o.tpot);
    values.e2e.push(o.ttft + (o.tpot ?? 0) * Math.max(0, o.outputTokens - 1));
  }
  const parts: string[] = [];
  for (const slo of slos) {
    const q = quantileOf(values[slo], objective);
    if (q === null || q > thresholds[slo]!) return null;
    parts.push(`${slo} ${round(q)}/${thresholds[slo]} s`);
  }
  return parts.join(', ');
}

/**
 * The SLO that breaks first where a limit saturates (no steady state: every wait grows without
 * bound): a saturated decode batch shows in TPOT first, a queue before the first token in TTFT.
 */
function saturatedSlo(slos: readonly CapacitySlo[], limit: CapacityLimit): CapacitySlo {
  const first: CapacitySlo[] = limit === 'decode' ? ['tpot', 'e2e', 'ttft'] : ['ttft', 'e2e', 'tpot'];
  return first.find((s) => slos.includes(s)) ?? slos[0]!;
}

/** The fitted model of one observation window, evaluated at any multiple of today's load. */
class Model {
  private readonly decoding: Observed[];
  private readonly all: Observed[];
  private readonly slope: number;
  private readonly base: number;
  /** TPOT per unit of prefill share (0 where the share does not tell), and how it was fitted. */
  private readonly perShare: number;
  private readonly tpotFrom: string;
  private readonly residual: Map<Observed, number>;
  private readonly meanBatch: number;
  private readonly meanReqBatch: number;
  private readonly decodeConst: number;
  private readonly decodeLinear: number;
  private readonly decodeCov: number;
  private readonly rateEff: number;
  private readonly prefillWork: number[];
  /** What every request's TTFT service spends regardless of its prompt: about one engine step, which grows with the batch. */
  private readonly stepPart: number;
  private readonly prefillFrom: string;
  private readonly waitRank: Map<Observed, number>;
  private readonly slots: number;
  private readonly slotsFrom: CapacityLimit;
  private base1: { prefill: Waits; slots: Waits } | null = null;

  constructor(private readonly input: EstimateInput, fit: TpotFit, private readonly draws: Draws) {
    const obs = input.observation;
    this.all = obs.usable;
    this.decoding = this.all.filter((o) => o.tpot !== null);
    this.slope = Math.max(0, fit.slope);
    this.perShare = fit.perShare;
    this.tpotFrom = fit.from;
    this.base = fit.slope > 0 || fit.perShare > 0 ? fit.intercept : meanOf(this.decoding.map((o) => o.tpot!));
    this.residual = new Map(this.decoding.map((o) => [o, o.tpot! - this.base - this.slope * o.batch - this.perShare * o.prefillShare]));
    this.meanBatch = obs.meanBatch > 0 ? obs.meanBatch : meanOf(this.decoding.map((o) => o.batch));
    this.meanReqBatch = meanOf(this.decoding.map((o) => o.batch));
    const n = this.all.length;
    // Little's law on the decode batch: batch = rate · E[(L−1) · TPOT], split into the part
    // that does not grow with the batch and the part that does.
    this.decodeConst = this.decoding.reduce((a, o) => a + (o.outputTokens - 1) * (this.base + this.perShare * o.prefillShare + this.residual.get(o)!), 0) / n;
    this.decodeLinear = this.slope * this.decoding.reduce((a, o) => a + (o.outputTokens - 1), 0) / n * this.meanReqBatch;
    this.decodeCov = this.slope * this.decoding.reduce((a, o) => a + (o.outputTokens - 1) * (o.batch - this.meanReqBatch), 0) / n;
    const decodeTime = this.decodeConst + this.decodeLinear + this.decodeCov;
    this.rateEff = decodeTime > 0 ? this.meanBatch / decodeTime : input.requestsPerSecond;
    const { work, fixed, from } = prefillWork(this.all, this.base + this.slope * this.meanReqBatch);
    this.prefillWork = work;
    this.stepPart = fixed;
    this.prefillFrom = from;
    const byWait = [...this.all].sort((a, b) => a.wait - b.wait);
    this.waitRank = new Map(byWait.map((o, i) => [o, (i + 0.5) / byWait.length]));
    const { slots, kvSequences } = input.limits;
    const kv = kvSequences ?? Infinity;
    const sl = slots ?? Infinity;
    this.slots = Math.min(kv, sl);
    this.slotsFrom = kv < sl ? 'kv_cache' : 'queue';
  }

  /** The decode batch at k × today's load, as a multiple of today's; null past the decode limit. */
  private batchGrowth(k: number): number | null {
    const m = this.meanBatch;
    if (!(m > 0)) return k;
    const r = k * this.rateEff;
    if (m - r * this.decodeLinear <= 0) return null;
    // ρ·m = r·(const + linear·ρ + cov·√ρ): increasing in ρ once the linear part is below m. The
    // constant part grows with k where decodes share more of their time with prompts in prefill.
    const constant = this.decodeConst + this.perShare * this.decoding.reduce((a, o) => a + (o.outputTokens - 1) * (this.shareAt(o, k) - o.prefillShare), 0) / this.all.length;
    let lo = 0;
    let hi = 1;
    const h = (rho: number) => rho * m - r * (constant + this.decodeLinear * rho + this.decodeCov * Math.sqrt(rho));
    while (h(hi) < 0) {
      hi *= 2;
      if (hi > 1e6) return null;
    }
    for (let i = 0; i < 60; i++) {
      const mid = (lo + hi) / 2;
      if (h(mid) < 0) lo = mid;
      else hi = mid;
    }
    return hi;
  }

  /**
   * The share of a request's decode beside a prompt in prefill at k × today's load: the prefill
   * line is busy k times as long (its load is rate times its work), each request keeping its
   * own difference from today's mean.
   */
  private shareAt(o: Observed, k: number): number {
    return Math.min(1, o.prefillShare + (k - 1) * this.input.observation.prefillBusy);
  }

  at(k: number): Prediction | null {
    const p = this.evaluate(k);
    return typeof p === 'string' ? null : p;
  }

  /** The percentiles at k × today's load, or the limit that saturates there (its queue never settles). */
  evaluate(k: number): Prediction | CapacityLimit {
    const rho = this.batchGrowth(k);
    if (rho === null) return 'decode';
    if (this.meanBatch * rho >= this.slots) return this.slotsFrom;
    const spread = Math.sqrt(rho);
    const meanReq = this.meanReqBatch * rho;
    const tpot = new Map<Observed, number>();
    const tpotGrowth = { batch: 0, prefill: 0 };
    for (const o of this.decoding) {
      const batch = Math.min(this.slots, meanReq + (o.batch - this.meanReqBatch) * spread);
      const share = this.shareAt(o, k);
      tpot.set(o, Math.max(0, this.base + this.slope * batch + this.perShare * share + this.residual.get(o)!));
      tpotGrowth.batch += (this.slope * (batch - o.batch)) / this.decoding.length;
      tpotGrowth.prefill += (this.perShare * (share - o.prefillShare)) / this.decoding.length;
    }
    const step0 = this.base + this.slope * this.meanReqBatch;
    const growth = step0 > 0 ? (this.base + this.slope * meanReq) / step0 : 1;
    const rate = k * this.input.requestsPerSecond;
    // Prompt work is token work: it does not grow with the decode batch; the step a first token waits for does.
    const prefill = singleServerWaits(this.draws, rate, this.prefillWork, 1);
    if (prefill === null) return 'prefill';
    const prefillMean = meanOf(Array.from(prefill));
    const stepGrowth = (o: Observed) => (growth - 1) * Math.min(o.service, this.stepPart);
    const held = this.all.map((o) => o.service + stepGrowth(o) + prefillMean + (o.outputTokens - 1) * (tpot.get(o) ?? 0));
    const slots = Number.isFinite(this.slots) ? multiServerWaits(this.draws, rate, held, 1, this.slots) : new Float64Array(0);
    if (slots === null) return this.slotsFrom;
    if (this.base1 === null) this.base1 = this.baseline();
    const b1 = this.base1;
    const q = this.input.objective;
    const ttft: number[] = [];
    const parts = { step: [] as number[], prefill: [] as number[], slots: [] as number[] };
    const e2e: number[] = [];
    for (const o of this.all) {
      const u = this.waitRank.get(o)!;
      const dStep = stepGrowth(o);
      const dPrefill = waitAt(prefill, u) - waitAt(b1.prefill, u);
      const dSlots = waitAt(slots, u) - waitAt(b1.slots, u);
      const floor = o.service + dStep;
      const t = Math.max(floor, o.ttft + dStep + dPrefill + dSlots);
      ttft.push(t);
      parts.step.push(Math.max(floor, o.ttft + dStep));
      parts.prefill.push(Math.max(o.service, o.ttft + dPrefill));
      parts.slots.push(Math.max(o.service, o.ttft + dSlots));
      const tp = tpot.get(o);
      e2e.push(tp === undefined ? t : t + (o.outputTokens - 1) * tp);
    }
    return {
      values: { ttft: quantileOf(ttft, q)!, tpot: quantileOf([...tpot.values()], q)!, e2e: quantileOf(e2e, q)! },
      parts: { step: quantileOf(parts.step, q)!, prefill: quantileOf(parts.prefill, q)!, slots: quantileOf(parts.slots, q)! },
      tpotGrowth,
    };
  }

  /** The queues at today's load, which today's TTFTs already hold. */
  private baseline(): { prefill: Waits; slots: Waits } {
    const rate = this.input.requestsPerSecond;
    const prefill = singleServerWaits(this.draws, rate, this.prefillWork, 1) ?? new Float64Array(0);
    const prefillMean = meanOf(Array.from(prefill));
    const held = this.all.map((o) => o.service + prefillMean + (o.outputTokens - 1) * (o.tpot ?? 0));
    const slots = Number.isFinite(this.slots) ? multiServerWaits(this.draws, rate, held, 1, this.slots) ?? new Float64Array(0) : new Float64Array(0);
    return { prefill, slots };
  }

  /**
   * What binds: the limit that saturates, where one does; else TPOT and the decode share of E2E
   * are the decode batch, and TTFT is whichever queue (or the step) grew it most.
   */
  limitOf(slo: CapacitySlo, at: Prediction | CapacityLimit): CapacityLimit {
    if (typeof at === 'string') return at;
    // TPOT grows with the batch (decode) or with the prompts in prefill beside each decode (prefill).
    const decodeSide: CapacityLimit = at.tpotGrowth.prefill > at.tpotGrowth.batch ? 'prefill' : 'decode';
    if (slo === 'tpot') return decodeSide;
    const today = this.at(1);
    const base = today?.values.ttft ?? 0;
    const grow = { decode: at.parts.step - base, prefill: at.parts.prefill - base, slots: at.parts.slots - base };
    if (slo === 'e2e' && today) {
      const decodeGrowth = at.values.e2e - today.values.e2e - (at.values.ttft - base);
      if (decodeGrowth > Math.max(grow.decode, grow.prefill, grow.slots)) return decodeSide;
    }
    if (grow.slots >= grow.prefill && grow.slots >= grow.decode && grow.slots > 0) return this.slotsFrom;
    return grow.prefill > grow.decode ? 'prefill' : 'decode';
  }

  evidence(at: Prediction | null = null, slo?: CapacitySlo, threshold?: number): CapacityEvidence[] {
    const out: CapacityEvidence[] = [
      { name: 'requestsPerSecond', value: round(this.input.requestsPerSecond), unit: 'req/s' },
      { name: 'requests', value: this.all.length, unit: 'requests', basis: 'finished streams far enough inside the window that all they overlapped is known' },
      { name: 'decodeBatch', value: round(this.meanBatch), unit: 'sequences', basis: 'time-average requests decoding, from the records (first to last token)' },
      { name: 'tpotBase', value: round(this.base), unit: 's' },
      { name: 'tpotPerSequence', value: round(this.slope), unit: 's', basis: this.tpotFrom },
      { name: 'tpotPerPrefillShare', value: round(this.perShare), unit: 's', basis: 'TPOT added by a decode spent wholly beside prompts in prefill (chunked prefill); 0 where the share does not tell' },
      { name: 'prefillBusy', value: round(this.input.observation.prefillBusy), unit: 'ratio', basis: 'share of the window with some prompt in prefill (the TTFT service after the queue)' },
      { name: 'prefillWorkMean', value: round(meanOf(this.prefillWork)), unit: 's', basis: this.prefillFrom },
      { name: 'prefillUtilization', value: round(this.input.requestsPerSecond * meanOf(this.prefillWork)), unit: 'ratio' },
      { name: 'batchLimit', value: Number.isFinite(this.slots) ? round(this.slots) : null, unit: 'sequences',
        basis: !Number.isFinite(this.slots) ? 'not seen: no engine KV figures, and the batch never stopped growing while requests waited'
          : this.slotsFrom === 'kv_cache' ? 'the KV cache at this mix: mean running / mean KV usage' : 'the largest running batch seen while requests waited with KV room' },
    ];
    if (at && slo && threshold !== undefined) out.push({ name: `${slo}AtCapacity`, value: round(at.values[slo]), unit: 's', basis: `threshold ${threshold} s` });
    return out;
  }
}
