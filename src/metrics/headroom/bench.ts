/**
 * Calibration by a bench (--bottleneck-bench, docs/headroom.md): `infermeter bench` against
 * this server measured where its SLO broke. That is a measurement where the model is an
 * extrapolation, but only for the mix the bench sent. So when today's mean prompt and output
 * lengths are both within MIX_TOLERANCE of that step's, the bench's rate is the capacity
 * (the model's own figure stays in the evidence); otherwise the model's figure stands and the
 * evidence says why the bench was not used.
 */
import type { BenchLimit } from '../bottleneck/capacity.js';
import { CAPACITY_LIMITS, CAPACITY_SLOS, type CapacityEstimate, type CapacityLimit, type CapacitySlo } from './estimate.js';
import type { HeadroomRequest } from './observe.js';

export type HeadroomBench = BenchLimit;

/** Relative difference of mean prompt and output tokens under which the bench's mix is today's. */
export const MIX_TOLERANCE = 0.25;

const round = (v: number) => Number(v.toPrecision(4));
const near = (a: number, b: number) => Math.abs(a - b) <= MIX_TOLERANCE * Math.max(a, b, 1);

/** Unknowns a bench can settle: the load did not vary, or was too light to reach the limit. */
const SETTLED = new Set(['load_not_varied', 'beyond_reach']);

export function calibrate(est: CapacityEstimate, bench: HeadroomBench, requests: readonly HeadroomRequest[]): CapacityEstimate {
  const rate = est.evidence.find((e) => e.name === 'requestsPerSecond')?.value ?? null;
  const prompt = requests.length ? requests.reduce((a, r) => a + r.inputTokens, 0) / requests.length : null;
  const output = requests.length ? requests.reduce((a, r) => a + r.outputTokens, 0) / requests.length : null;
  const benchItem = { name: 'benchCapacity', value: round(bench.requestsPerSecond), unit: 'req/s', basis: `--bottleneck-bench: the SLO broke at ${bench.step}` };
  const same = prompt !== null && output !== null && bench.promptTokens !== null && bench.outputTokens !== null && near(prompt, bench.promptTokens) && near(output, bench.outputTokens);
  if (!same) {
    const why = bench.promptTokens === null || bench.outputTokens === null ? 'the bench report has no token figures'
      : `its mix (${round(bench.promptTokens)} prompt, ${round(bench.outputTokens)} output tokens) is not today's (${prompt === null ? '-' : round(prompt)}, ${output === null ? '-' : round(output)})`;
    return { ...est, evidence: [...est.evidence, { ...benchItem, basis: `${benchItem.basis}; not used: ${why}` }] };
  }
  if (est.state === 'unknown' && !SETTLED.has(est.reason!)) return { ...est, evidence: [...est.evidence, benchItem] };
  if (rate === null || !(rate > 0)) return est;
  const model = est.requestsPerSecond;
  const slo = est.bindingSlo ?? (CAPACITY_SLOS.includes(bench.slo as CapacitySlo) ? (bench.slo as CapacitySlo) : null);
  const limit = est.bindingLimit ?? (CAPACITY_LIMITS.includes(bench.kind as CapacityLimit) ? (bench.kind as CapacityLimit) : null);
  return {
    state: 'estimate', requestsPerSecond: round(bench.requestsPerSecond), loadRatio: round(rate / bench.requestsPerSecond), bindingSlo: slo, bindingLimit: limit, reason: null,
    summary: `the bench of this server measured the SLO break at ${round(bench.requestsPerSecond)} req/s at today's mix (${bench.step})${model === null ? '' : `; the model alone says ${model} req/s`}`,
    evidence: [...est.evidence, { ...benchItem, basis: `${benchItem.basis}; calibrates: same mix within ${MIX_TOLERANCE * 100} %` }, { name: 'modelCapacity', value: model, unit: 'req/s' }],
  };
}
