// test-group: alone (arrival times are checked against the demo's schedule)
/**
 * README, "Two commands", and `infermeter demo --help`: each step of the demo is an open-loop
 * schedule of fixed length. Arrivals come at the offered rate whatever the streams' speed, each
 * step lasts its stated length, and `--duration` split over `--rates` runs every step. What
 * was sent is counted on the proxy's side (its workload trace: when each request reached
 * infermeter), not from the demo's own line.
 *
 * The demo's defaults are 20 s steps with a line every 5 s. Here everything is a fifth of
 * that or less: 3 s steps (`--rates 3,6,12 --duration 9s`) and 1 s windows. After the first window
 * of a step, each window holds offered × window ± 50 %, and each step lasts 3 s ± 10 %.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../helpers.js';

const RATES = [3, 6, 12];
const STEP_MS = 3000;
const WINDOW_MS = 1000;

/**
 * Splits sorted arrival times into one run per rate, in order: each boundary is put where the
 * fewest gaps between arrivals disagree with it (a gap is nearer 1/rate of the step before or
 * of the step after, on a log scale), so one late timer does not move it. The rates rise.
 */
function splitSteps(times: readonly number[], rates: readonly number[]): number[][] {
  const out: number[][] = [];
  let rest = [...times];
  for (let k = 0; k < rates.length - 1; k++) {
    const gaps = rest.slice(1).map((t, i) => t - rest[i]!);
    const nearerNext = gaps.map((g) => Math.abs(Math.log((g * rates[k + 1]!) / 1000)) < Math.abs(Math.log((g * rates[k]!) / 1000)));
    // Split s: arrivals [0, s) are step k; gap i leads from arrival i, so gaps [0, s) are step k's.
    let best = 1;
    let bestCost = Infinity;
    for (let s = 1; s <= rest.length; s++) {
      const cost = nearerNext.reduce((c, next, i) => c + (i < s ? (next ? 1 : 0) : (next ? 0 : 1)), 0);
      if (cost < bestCost) [best, bestCost] = [s, cost];
    }
    out.push(rest.slice(0, best));
    rest = rest.slice(best);
  }
  out.push(rest);
  return out;
}

test('demo --rates 3,6,12 --duration 9s: three open-loop steps of 3 s, each sending its rate, then a visible drain', { timeout: 60_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'infermeter-demo-open-loop-'));
  const trace = join(dir, 'trace.jsonl');
  const args = ['demo', '--listen', '127.0.0.1:0', '--metrics-listen', '127.0.0.1:0', '--rates', RATES.join(','), '--duration', `${(RATES.length * STEP_MS) / 1000}s`, '--summary-every', `${WINDOW_MS / 1000}s`];
  const child = spawn(process.execPath, [`${ROOT}dist/src/cli.js`, ...args], { env: { ...process.env, INFERMETER_WORKLOAD_TRACE: trace, FAKE_NVIDIA_SMI_GPUS: '1' }, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  try {
    const exited = once(child, 'exit') as Promise<[number | null]>;
    const timer = new Promise<'late'>((r) => setTimeout(() => r('late'), 45_000).unref());
    const ended = await Promise.race([exited, timer]);
    assert.notEqual(ended, 'late', `the demo did not end by itself after --duration and its drain:\n${out}`);
    assert.equal((ended as [number | null])[0], 0, out);

    const lines = readFileSync(trace, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { timestamp: number; outcome: string });
    const times = lines.map((l) => l.timestamp).sort((a, b) => a - b);
    const steps = splitSteps(times, RATES);
    const figures: string[] = [];
    for (const [k, rate] of RATES.entries()) {
      const own = steps[k]!;
      assert.ok(own.length >= 2, `step ${k + 1} (${rate} req/s) did not run: ${own.length} arrivals\n${out}`);
      const start = own[0]!;
      // A step ends where the next one's first arrival is; the last one a gap after its last arrival.
      const end = k + 1 < RATES.length ? steps[k + 1]![0]! : own[own.length - 1]! + 1000 / rate;
      const counts: number[] = [];
      for (let w = start + WINDOW_MS; w + WINDOW_MS <= start + STEP_MS; w += WINDOW_MS) counts.push(own.filter((t) => t >= w && t < w + WINDOW_MS).length);
      figures.push(`${rate} req/s: ${end - start} ms, sent per ${WINDOW_MS / 1000} s after the first ${counts.join(', ')} (offered ${(rate * WINDOW_MS) / 1000})`);
      assert.ok(Math.abs(end - start - STEP_MS) <= STEP_MS * 0.1, `step ${k + 1} lasted ${end - start} ms, not ${STEP_MS} ms ± 10 %: ${figures.join('; ')}`);
      for (const c of counts) {
        const offered = (rate * WINDOW_MS) / 1000;
        assert.ok(Math.abs(c - offered) <= offered * 0.5, `step ${k + 1}: ${c} sent in a window, offered ${offered} ± 50 %: ${figures.join('; ')}`);
      }
    }
    console.log(figures.join('\n'));
    // Every request sent was let finish: the drain ran to its end, none cut.
    assert.deepEqual(lines.filter((l) => l.outcome !== 'ok').map((l) => l.outcome), [], 'requests cut short');

    // The line says what was sent, and the drain after the last step is not labelled as offering.
    for (const rate of RATES) assert.match(out, new RegExp(`offered ${rate} req/s \\| sent [0-9.]+ req/s \\| in flight [0-9]+ \\| done [0-9.]+ req/s`), out);
    const drain = out.indexOf('draining');
    assert.ok(drain > out.lastIndexOf(`offered ${RATES[RATES.length - 1]} req/s`), `no drain line after the last step:\n${out}`);
    assert.doesNotMatch(out.slice(drain), /offered/, `still "offered" while draining:\n${out}`);
    assert.match(out.slice(drain), /demo stopped/);
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});
