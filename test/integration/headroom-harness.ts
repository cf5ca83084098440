/**
 * One headroom regime through real sockets (docs/headroom.md, "Accuracy"): the simulator
 * shaped as the regime (its own process), infermeter in front of it (its own process), the
 * regime's mix as Poisson load through the proxy at shares of the knee the bench
 * measured (bench/headroom-regimes.ts), and models[].capacity read from /api/v1/status
 * (the unknown test checks it against the schema). The error per load is printed and held
 * to the bound docs/headroom.md sets for these short runs.
 */
import assert from 'node:assert/strict';
import { REGIMES } from '../../bench/headroom-regimes.js';
import { MODEL, liveLevels } from '../../bench/headroom-run.js';

/** --speed for the tests: the bench's, so the knees it measured apply. */
export const SPEED = 2;
/**
 * The bound these short runs are held to: a 24 s window of a loaded test machine, against the
 * ±20 % docs/headroom.md reports for the bench's minute-long windows.
 */
export const TEST_BOUND = 0.4;
/** Wall seconds of requests each estimate is fitted on, and of load before it is read. */
export const WINDOW = 24;

export interface AccuracyRun {
  /** The limits the estimate may name. */
  limits: readonly string[];
  /** The error allowed: ±bound, or [below, above] where docs/headroom.md reports the model short of the target. */
  bound?: number | [number, number];
  speed?: number;
  /** Wall seconds; a regime of long requests needs more of them in the window than the margins at its ends take. */
  window?: number;
  /** Loads as shares of the knee (default 50 % and 70 %). */
  shares?: number[];
}

export async function checkAccuracy(name: string, run: AccuracyRun): Promise<void> {
  const regime = REGIMES.find((r) => r.name === name)!;
  const { limits, bound = TEST_BOUND, speed = SPEED, window = WINDOW, shares = [0.5, 0.7] } = run;
  const reads = await liveLevels(regime, { speed, knee: regime.knee, shares, warmSeconds: window + 4, reads: 3, readEvery: 2, windowSeconds: window });
  for (const r of reads) {
    const err = r.error === null ? 'unknown' : `${(r.error * 100).toFixed(1)} %`;
    console.log(`# headroom ${name} at ${r.share * 100} % of ${regime.knee} req/s: estimate ${r.estimate?.toFixed(3) ?? 'unknown'} req/s, error ${err}, ${r.bindingSlo}/${r.bindingLimit}; reads ${r.estimates.map((e) => e?.toFixed(2) ?? '-').join(' ')} ${r.reasons.join(' ')}`);
  }
  for (const r of reads) {
    assert.notEqual(r.estimate, null, `${name} at ${r.share}: unknown (${r.reasons.join(', ')})`);
    const [below, above] = typeof bound === 'number' ? [-bound, bound] : bound;
    assert.ok(r.error! >= below && r.error! <= above, `${name} at ${r.share * 100} %: ${r.estimate} req/s against the knee ${regime.knee}: ${(r.error! * 100).toFixed(1)} % (bound ${below * 100} % to +${above * 100} %)`);
    assert.ok(limits.includes(r.bindingLimit!), `${name}: binding limit ${r.bindingLimit}, expected one of ${limits.join(', ')}`);
  }
}

export { MODEL };
