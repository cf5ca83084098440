/**
 * The fits the headroom model (estimate.ts) is built on, from one window's observed requests:
 * how TPOT grows (with the batch, and with the prompts in prefill beside each decode), and each
 * request's own prefill work.
 */
import { fitPlane, meanOf, medianLine, quantileOf, type Line, type Observed } from './observe.js';

/** Prompt lengths vary enough to fit service against them (coefficient of variation). */
const MIN_PROMPT_CV = 0.2;
/**
 * The prefill share is a second regressor of TPOT only where it tells: its slope above this
 * many standard errors, and the share spread (10th to 90th percentile) at least PREFILL_SPREAD.
 */
const PREFILL_SIGNIFICANCE = 3;
const PREFILL_SPREAD = 0.1;

/** TPOT's fit: the batch line, and the prefill share's slope where it tells. */
export interface TpotFit {
  intercept: number;
  slope: number;
  perShare: number;
  from: string;
}

/**
 * TPOT = base + slope · batch, through the medians of ten slices by batch; or, where TPOT also
 * rises with the share of the decode beside prompts in prefill (that slope significant and the
 * share spread), TPOT = base + slope · batch + perShare · share by least squares, trimmed. An
 * engine that runs prompt chunks in the decode step slows every sequence while a prompt is in
 * prefill; more requests in flight also means more prompts, so without the second regressor
 * that slowdown reads as batch growth, and a prefill-bound engine was named decode-bound.
 */
export function tpotFit(decoding: readonly Observed[], line: Line): TpotFit {
  const single = { intercept: line.intercept, slope: line.slope, perShare: 0, from: 'a line through the median TPOT of ten slices of requests by the mean batch during their decode' };
  const shares = decoding.map((o) => o.prefillShare);
  if (quantileOf(shares, 0.9)! - quantileOf(shares, 0.1)! < PREFILL_SPREAD) return single;
  const plane = fitPlane(decoding.map((o) => o.batch), shares, decoding.map((o) => o.tpot!));
  if (plane === null || !(plane.perShare > PREFILL_SIGNIFICANCE * plane.perShareError)) return single;
  return { intercept: plane.intercept, slope: plane.slope, perShare: plane.perShare, from: 'least squares of TPOT on the mean batch during the decode and the share of it beside prompts in prefill (trimmed of outliers)' };
}

/**
 * Each request's own prefill work (seconds the prefill line is busy with it): its TTFT
 * service less what any request pays regardless of its prompt. With prompt lengths that
 * vary, that is the intercept of service against prompt tokens; otherwise one engine step.
 */
export function prefillWork(all: readonly Observed[], step: number): { work: number[]; fixed: number; from: string } {
  const prompts = all.map((o) => o.inputTokens);
  const mean = meanOf(prompts);
  const sd = Math.sqrt(meanOf(prompts.map((p) => (p - mean) ** 2)));
  let fixed = step;
  let from = 'TTFT service (after the queue) less one engine step: prompt lengths did not vary enough to fit';
  if (mean > 0 && sd / mean >= MIN_PROMPT_CV) {
    const line = medianLine(prompts, all.map((o) => o.service));
    if (line && line.slope > 0 && line.slope > 3 * line.slopeError) {
      fixed = Math.max(0, line.intercept);
      from = 'TTFT service (after the queue) less its intercept against prompt length';
    }
  }
  return { work: all.map((o) => Math.max(0, o.service - fixed)), fixed, from };
}
