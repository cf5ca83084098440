/**
 * The demo's load schedule, from its flags: the rates in order, each for one step's length,
 * back to back on one clock. With --duration and no --step the duration is split evenly over
 * the rates, so that every rate runs once; with both, the rates cycle until --duration, and
 * what that leaves out (a rate that never runs, a last step cut short) is said at startup.
 */

export const DEFAULT_STEP_SECONDS = 20;

export interface DemoStep {
  rate: number;
  seconds: number;
}

export interface DemoSchedule {
  rates: readonly number[];
  stepSeconds: number;
  /** Seconds of load in all; Infinity: the rates cycle until Ctrl-C. */
  totalSeconds: number;
  /** What the flags leave out, for the startup banner; null when every rate runs whole steps. */
  note: string | null;
}

/** stepSeconds null: --step was not given. durationSeconds 0: until Ctrl-C. */
export function demoSchedule(rates: readonly number[], stepSeconds: number | null, durationSeconds: number): DemoSchedule {
  if (durationSeconds === 0) return { rates, stepSeconds: stepSeconds ?? DEFAULT_STEP_SECONDS, totalSeconds: Infinity, note: null };
  const step = stepSeconds ?? durationSeconds / rates.length;
  return { rates, stepSeconds: step, totalSeconds: durationSeconds, note: leftOut(rates, step, durationSeconds) };
}

/** Step i (from 0), or null past the schedule's end; the last one may be shorter than a step. */
export function stepAt(s: DemoSchedule, i: number): DemoStep | null {
  const left = s.totalSeconds - i * s.stepSeconds;
  if (left <= EPSILON) return null;
  return { rate: s.rates[i % s.rates.length]!, seconds: Math.min(s.stepSeconds, left) };
}

/** Float slack when a duration is a whole number of steps (0.3 / 0.1 is not 3). */
const EPSILON = 1e-9;

function leftOut(rates: readonly number[], step: number, duration: number): string | null {
  const steps = Math.ceil(duration / step - EPSILON);
  const cut = duration - (steps - 1) * step;
  const said: string[] = [];
  if (steps < rates.length) said.push(`${rates.slice(steps).join(', ')} req/s ${rates.length - steps === 1 ? 'does' : 'do'} not run`);
  if (step - cut > EPSILON) said.push(`the last step (${rates[(steps - 1) % rates.length]} req/s) runs ${seconds(cut)}, not ${seconds(step)}`);
  return said.length === 0 ? null : `--duration ${seconds(duration)} at ${seconds(step)} a step: ${said.join('; ')}`;
}

export function seconds(v: number): string {
  return `${Number(v.toFixed(3))}s`;
}
