/**
 * src/metrics/energy/ledger.ts on hand-made energy and work: a second's energy goes to an
 * upstream's models by their work in it, or idle; busy plus idle is every joule handed in; a
 * second waits for the requests that were in flight during it, at most MAX_HOLD_MS; a GPU of two
 * upstreams is split by their work; late energy lands in the oldest open second, never lost.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EnergyLedger, MAX_HOLD_MS, START_SLACK_MS, type Share, type WorkItem } from '../../../src/metrics/energy/ledger.js';

const work = (over: Partial<WorkItem>): WorkItem => ({
  upstream: 'a', model: 'x', startMs: 0, ttftMs: null, endMs: 0, prefillSeconds: 0, outputTokens: 0, goodOutputTokens: 0, ...over,
});
const sum = (shares: Share[], f: (s: Share) => number, where: (s: Share) => boolean = () => true) => shares.filter(where).reduce((a, s) => a + f(s), 0);
const near = (a: number, b: number, what: string) => assert.ok(Math.abs(a - b) < 1e-9 * Math.max(1, Math.abs(b)), `${what}: ${a} vs ${b}`);

test('each second\'s energy goes to the models by their work in it; busy + idle = every joule; tokens follow the seconds they ran in', () => {
  const l = new EnergyLedger();
  l.addEnergy('0', ['a'], 0, 12_000, 120); // 10 W for 12 s
  // x: 0-10 s, 100 output tokens (10 a second); y: 5-10 s, 100 tokens (20 a second), 60 of them good.
  l.addWork(work({ model: 'x', startMs: 0, endMs: 10_000, outputTokens: 100, goodOutputTokens: 100 }));
  l.addWork(work({ model: 'y', startMs: 5000, endMs: 10_000, outputTokens: 100, goodOutputTokens: 60 }));
  const shares = l.settle(20_000, null);
  near(sum(shares, (s) => s.joules), 120, 'every joule handed in');
  near(sum(shares, (s) => s.joules, (s) => s.model === 'x'), 50 + 5 * (10 * 10 / 30), 'x: all of 0-5 s, a third of 5-10 s');
  near(sum(shares, (s) => s.joules, (s) => s.model === 'y'), 5 * (10 * 20 / 30), 'y: two thirds of 5-10 s');
  near(sum(shares, (s) => s.joules, (s) => s.state === 'idle'), 20, '10-12 s ran no request: idle');
  assert.ok(shares.filter((s) => s.state === 'idle').every((s) => s.model === '' && s.outputTokens === 0), 'idle has an empty model and no tokens');
  near(sum(shares, (s) => s.outputTokens, (s) => s.model === 'y'), 100, 'y\'s tokens');
  near(sum(shares, (s) => s.goodOutputTokens, (s) => s.model === 'y'), 60, 'y\'s good tokens');
  near(sum(shares, (s) => s.gpuSeconds), 12, 'GPU-seconds');
  assert.equal(l.pending, 0);
});

test('prompts take the share of a second their prefill took, output tokens share the rest; prefill weighs on the time to first token', () => {
  const l = new EnergyLedger();
  l.addEnergy('0', ['a'], 0, 4000, 40);
  // p: 0.5 s of prefill over 0-2 s (a quarter of each second), then no token; q: 100 output tokens over 0-4 s.
  l.addWork(work({ model: 'p', startMs: 0, ttftMs: 2000, endMs: 4000, prefillSeconds: 0.5 }));
  l.addWork(work({ model: 'q', startMs: 0, ttftMs: 0, endMs: 4000, outputTokens: 100 }));
  const shares = l.settle(10_000, null);
  near(sum(shares, (s) => s.joules, (s) => s.model === 'p'), 2 * 10 * 0.25, 'p: a quarter of 0-2 s, none of 2-4 s');
  near(sum(shares, (s) => s.joules, (s) => s.model === 'q'), 2 * 10 * 0.75 + 20, 'q: the rest');
  // Prefill of more than a second's worth takes the whole second, whatever the output tokens.
  const full = new EnergyLedger();
  full.addEnergy('0', ['a'], 0, 1000, 10);
  full.addWork(work({ model: 'p', startMs: 0, ttftMs: 1000, endMs: 1000, prefillSeconds: 3 }));
  full.addWork(work({ model: 'q', startMs: 0, endMs: 1000, outputTokens: 10 }));
  near(sum(full.settle(5000, null), (s) => s.joules, (s) => s.model === 'p'), 10, 'p: all of it');
});

test('a second in which requests were in flight but made no token and prefilled nothing counted is busy, split by their time in flight', () => {
  const l = new EnergyLedger();
  l.addEnergy('0', ['a'], 0, 3000, 30);
  // p waits 0-2 s for its first token (prompt size unknown), then 40 tokens in 2-3 s; q is in flight 1-2 s, waiting, then ends without a token.
  l.addWork(work({ model: 'p', startMs: 0, ttftMs: 2000, endMs: 3000, outputTokens: 40 }));
  l.addWork(work({ model: 'q', startMs: 1000, ttftMs: null, endMs: 2000 }));
  const shares = l.settle(10_000, null);
  near(sum(shares, (s) => s.joules, (s) => s.state === 'idle'), 0, 'no second is idle: a request was in flight in each');
  near(sum(shares, (s) => s.joules, (s) => s.model === 'p'), 10 + 5 + 10, 'p: second 0, half of second 1 (equal time in flight with q), second 2 (its tokens)');
  near(sum(shares, (s) => s.joules, (s) => s.model === 'q'), 5, 'q: half of second 1');
});

test('a second waits until no request in flight started before its end; a request that never ends holds it at most MAX_HOLD_MS', () => {
  const l = new EnergyLedger();
  l.addEnergy('0', ['a'], 0, 5000, 50);
  assert.deepEqual(l.settle(8000, 0), [], 'a request in flight since 0 s has not ended: nothing is split, nothing is called idle');
  l.addWork(work({ model: 'y', startMs: 0, ttftMs: 100, endMs: 2000, outputTokens: 20 }));
  // x is still in flight, seen first at 2.7 s: the seconds ending by then, less the slack for its batch's delay, are complete.
  const early = l.settle(8000, 2500 + START_SLACK_MS);
  assert.deepEqual(early.map((s) => [s.at, s.model]), [[0, 'y'], [1000, 'y']]);
  l.addWork(work({ model: 'x', startMs: 2500, ttftMs: 100, endMs: 5000, outputTokens: 50 }));
  const shares = l.settle(8000, null);
  near(sum([...early, ...shares], (s) => s.joules, (s) => s.state === 'busy'), 50, 'every second busy');
  near(sum(shares, (s) => s.joules, (s) => s.model === 'x'), 30, 'x: 2-5 s');

  const held = new EnergyLedger();
  held.addEnergy('0', ['a'], 0, 1000, 10);
  held.addWork(work({ startMs: 0, endMs: 1000, outputTokens: 5 }));
  assert.deepEqual(held.settle(1000 + MAX_HOLD_MS - 1, 0), []);
  near(sum(held.settle(1000 + MAX_HOLD_MS, 0), (s) => s.joules), 10, 'split after MAX_HOLD_MS, with the work it has');
});

test('a second waits for its energy: until every reporting GPU has read past it, or ENERGY_WAIT_MS', () => {
  const l = new EnergyLedger();
  l.addEnergy('0', ['a'], 0, 2000, 20);
  l.addEnergy('1', ['a'], 0, 1000, 10); // GPU 1 has read through 1 s only
  const first = l.settle(3000, null);
  assert.deepEqual(first.map((s) => s.at), [0], 'only the first second is complete');
  l.addEnergy('1', ['a'], 1000, 2000, 10);
  near(sum(l.settle(3000, null), (s) => s.joules), 20, 'the second second, both GPUs');
});

test('a GPU of two upstreams is split equally between those that worked in the second, or all; a GPU of none is not attributed', () => {
  const l = new EnergyLedger();
  l.addEnergy('0', ['a', 'b'], 0, 1000, 30);
  l.addEnergy('1', [], 0, 1000, 99);
  l.addWork(work({ upstream: 'a', startMs: 0, endMs: 1000, outputTokens: 10 }));
  l.addWork(work({ upstream: 'b', model: 'z', startMs: 0, endMs: 1000, outputTokens: 20 }));
  l.addEnergy('0', ['a', 'b'], 1000, 2000, 30);
  l.addEnergy('1', [], 1000, 2000, 99);
  const shares = l.settle(5000, null);
  near(sum(shares, (s) => s.joules, (s) => s.upstream === 'a' && s.state === 'busy'), 15, 'a: half');
  near(sum(shares, (s) => s.joules, (s) => s.upstream === 'b' && s.state === 'busy'), 15, 'b: half');
  l.addEnergy('0', ['a', 'b'], 2000, 3000, 30);
  l.addEnergy('1', [], 2000, 3000, 99);
  l.addWork(work({ upstream: 'b', model: 'z', startMs: 2000, endMs: 3000, outputTokens: 5 }));
  near(sum(l.settle(9000, null), (s) => s.joules, (s) => s.upstream === 'b' && s.state === 'busy'), 30, 'only b worked: all of it');
  near(sum(shares, (s) => s.joules, (s) => s.state === 'idle'), 30, 'second 2: idle, half each');
  assert.deepEqual(shares.filter((s) => s.state === 'idle').map((s) => [s.upstream, s.joules]), [['a', 15], ['b', 15]]);
  near(sum(shares, (s) => s.joules), 60, 'the unattributed GPU is not in any share');
});

test('energy or work for a second already split goes to the oldest open one: nothing lost', () => {
  const l = new EnergyLedger();
  l.addEnergy('0', ['a'], 0, 2000, 20);
  near(sum(l.settle(5000, null), (s) => s.joules), 20, 'seconds 0-1 idle');
  l.addEnergy('0', ['a'], 2000, 3000, 10);
  l.addEnergy('0', ['a'], 0, 2000, 7); // late: a reading that spans seconds already split
  l.addWork(work({ startMs: 500, endMs: 2500, outputTokens: 40 })); // three quarters of it late
  const shares = l.settle(6000, null);
  near(sum(shares, (s) => s.joules), 17, 'the late 7 J with second 2');
  near(sum(shares, (s) => s.outputTokens), 40, 'and all 40 tokens');
  assert.ok(shares.every((s) => s.at === 2000 && s.state === 'busy'));
});
