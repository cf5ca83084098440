/** The demo's load schedule from --rates, --step and --duration (src/demo/schedule.ts). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { demoSchedule, stepAt, type DemoSchedule } from '../../../src/demo/schedule.js';

/** Every step of a finite schedule, as "rate×seconds". */
function steps(s: DemoSchedule): string[] {
  const out: string[] = [];
  for (let i = 0, step = stepAt(s, 0); step; step = stepAt(s, ++i)) out.push(`${step.rate}×${Number(step.seconds.toFixed(6))}`);
  return out;
}

const CASES: { name: string; rates: number[]; step: number | null; duration: number; steps: string[]; note: string | null }[] = [
  { name: '--duration with no --step: split evenly, every rate once', rates: [1, 2, 4], step: null, duration: 60, steps: ['1×20', '2×20', '4×20'], note: null },
  { name: 'the default rates over 60 s: 15 s each', rates: [1, 2, 4, 8], step: null, duration: 60, steps: ['1×15', '2×15', '4×15', '8×15'], note: null },
  { name: '--step and a longer --duration: the rates cycle', rates: [1, 2], step: 10, duration: 40, steps: ['1×10', '2×10', '1×10', '2×10'], note: null },
  {
    name: '--step and a --duration that cannot hold every rate: said, the last step cut',
    rates: [1, 2, 4, 8], step: 20, duration: 50, steps: ['1×20', '2×20', '4×10'],
    note: '--duration 50s at 20s a step: 8 req/s does not run; the last step (4 req/s) runs 10s, not 20s',
  },
  { name: 'two rates left out', rates: [1, 2, 4], step: 20, duration: 20, steps: ['1×20'], note: '--duration 20s at 20s a step: 2, 4 req/s do not run' },
  { name: 'a whole number of steps, despite floats', rates: [5, 6, 7], step: 0.1, duration: 0.3, steps: ['5×0.1', '6×0.1', '7×0.1'], note: null },
];

for (const c of CASES) {
  test(`demoSchedule: ${c.name}`, () => {
    const s = demoSchedule(c.rates, c.step, c.duration);
    assert.deepEqual(steps(s), c.steps);
    assert.equal(s.note, c.note);
  });
}

test('demoSchedule: no --duration cycles the rates until stopped, at --step or 20 s', () => {
  const s = demoSchedule([1, 2], null, 0);
  assert.equal(s.totalSeconds, Infinity);
  assert.deepEqual([0, 1, 2, 1001].map((i) => stepAt(s, i)), [{ rate: 1, seconds: 20 }, { rate: 2, seconds: 20 }, { rate: 1, seconds: 20 }, { rate: 2, seconds: 20 }]);
  assert.deepEqual(stepAt(demoSchedule([3], 5, 0), 7), { rate: 3, seconds: 5 });
});
