/**
 * `infermeter bench`'s energy per step, end to end: the simulator as the target and the fake
 * `nvidia-smi` replaying readings of known, constant power (250 W and 150 W), so the GPUs'
 * energy over a step is 400 W times its seconds, whatever the machine's load. Each step of
 * the report (a load step, and a replay) gives its joules, J per output token and per good
 * output token, and the cost per million output tokens at --gpu-hour-cost/--energy-price in
 * --currency; the report validates, and Markdown, HTML and `bench compare` show the figures.
 * Both sides of each comparison come from the same readings and the report's own samples.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSimulator, type Simulator } from '../../src/sim/index.js';
import { runBench } from '../../src/bench/run.js';
import { resolveBenchOptions, type BenchFlags } from '../../src/bench/options.js';
import type { BenchReport, StepReport } from '../../src/bench/report.js';
import { renderMarkdown } from '../../src/bench/markdown.js';
import { renderHtml } from '../../src/bench/html.js';
import { renderCompare } from '../../src/bench/compare.js';
import { reportValidator } from '../unit/bench/fixture.js';
import { ROOT } from '../helpers.js';
import { FAKE_NVIDIA_SMI } from './bench-helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'bench-energy-'));
let sim: Simulator | null = null;
after(async () => {
  await sim?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Two GPUs of constant power, one reading each per round (the fake prints a row every FAKE_NVIDIA_SMI_PERIOD_MS). */
const WATTS = [250, 150];
const DMON = join(dir, 'dmon.txt');
writeFileSync(DMON, [
  '# gpu    pwr  gtemp  mtemp     sm    mem    enc    dec',
  '# Idx      W      C      C      %      %      %      %',
  ...WATTS.map((w, i) => `    ${i}    ${w}     40      -     50     20      0      0`),
  '',
].join('\n'));
const ENV = { ...process.env, FAKE_NVIDIA_SMI_GPUS: '2', FAKE_NVIDIA_SMI_PERIOD_MS: '100', FAKE_NVIDIA_SMI_REPLAY: DMON };
/** The step's boundaries fall between readings 100 ms apart; constant power makes the integral exact but for float rounding. */
const TOLERANCE = 0.005;
const PRICES = { gpuHourCost: 3.6, energyPrice: 0.25 };

async function bench(target: string, over: Partial<BenchFlags>): Promise<BenchReport> {
  const flags: BenchFlags = {
    target, route: 'completion', inputTokens: '200', outputTokens: '16', warmup: '1', requests: '0', duration: '3s', arrivals: 'constant', seed: '3',
    nvidiaSmi: FAKE_NVIDIA_SMI, engineMetrics: 'none', sampleInterval: '200ms', slo: 'ttft=40ms',
    gpuHourCost: String(PRICES.gpuHourCost), energyPrice: String(PRICES.energyPrice), currency: 'EUR', ...over,
  };
  return runBench({ ...resolveBenchOptions(flags, ['test']), env: ENV });
}

/** The step's energy as the test expects it: 400 W over the step, its own requests' tokens, the prices' cost. */
function checkStep(st: StepReport, slo: { ttft: number }): Record<string, number> {
  const e = st.energy;
  assert.ok(e, `step ${st.mode} ${st.load} has energy`);
  const seconds = st.summary.seconds;
  const expected = WATTS.reduce((a, w) => a + w, 0) * seconds;
  assert.ok(Math.abs(e.joules - expected) / expected < TOLERANCE, `joules ${e.joules} vs ${expected} (400 W × ${seconds} s)`);
  assert.equal(e.gpus, 2);
  assert.ok(Math.abs(e.gpuSeconds - 2 * seconds) < 1e-9);
  const tokens = st.requests.reduce((a, s) => a + s.outputTokens, 0);
  // Good: ok and within the one SLO (TTFT), as goodput counts it.
  const good = st.requests.filter((s) => s.outcome === 'ok' && s.ttft !== null && s.ttft <= slo.ttft).reduce((a, s) => a + s.outputTokens, 0);
  assert.ok(tokens > 0);
  assert.equal(e.outputTokens, tokens);
  assert.equal(e.goodOutputTokens, good);
  assert.equal(e.joulesPerOutputToken, e.joules / tokens);
  assert.equal(e.joulesPerGoodOutputToken, good > 0 ? e.joules / good : null);
  const cost = (e.joules / 3.6e6) * PRICES.energyPrice + (e.gpuSeconds / 3600) * PRICES.gpuHourCost;
  assert.ok(Math.abs(e.costPerMillionOutputTokens! - (cost / tokens) * 1e6) < 1e-9, `cost ${e.costPerMillionOutputTokens}`);
  assert.equal(e.currency, 'EUR');
  return { joules: e.joules, expected, jPerToken: e.joulesPerOutputToken!, costPerMillion: e.costPerMillionOutputTokens! };
}

test('bench steps and a replay carry the GPUs\' energy, J per (good) output token and cost per million; Markdown, HTML and compare show them', { timeout: 60_000 }, async () => {
  sim = await startSimulator({ listen: '127.0.0.1:0', speed: 4 });
  const slo = { ttft: 0.04 };
  const report = await bench(sim.url, { qps: '4' });
  assert.equal(report.monitor.gpuError, null);
  const validate = reportValidator();
  assert.ok(validate(JSON.parse(JSON.stringify(report))), JSON.stringify(validate.errors));
  assert.equal(report.steps.length, 1);
  const figures = checkStep(report.steps[0]!, slo);
  console.log(`load step: ${JSON.stringify(figures)}`);
  assert.deepEqual(report.config['prices'], { ...PRICES, currency: 'EUR' });

  const md = renderMarkdown(report);
  const e = report.steps[0]!.energy!;
  assert.match(md, /\| load \| GPU energy \(J\) \| GPUs \| mean power per GPU \(W\) \| output tokens \| J \/ output token \| J \/ good output token \| cost \/ 1M output tokens \(EUR\) \|/);
  assert.ok(md.includes(`| 4 req/s | ${e.joules.toFixed(0)} | 2 | 200 | ${e.outputTokens} | ${e.joulesPerOutputToken!.toFixed(3)} |`), md);
  const html = renderHtml(report);
  assert.ok(html.includes('GPU energy per output token'), 'the HTML charts J per token');
  assert.ok(html.includes(`<td>${e.joulesPerOutputToken!.toFixed(3)}</td>`), 'and has the table');
  const compare = renderCompare(report, report, ['a', 'b']);
  assert.ok(compare.includes(`| 4 req/s J / output token | ${e.joulesPerOutputToken!.toFixed(3)} J/tok | ${e.joulesPerOutputToken!.toFixed(3)} J/tok | +0.000 | +0.0% |`), compare);
  assert.match(compare, /^\| 4 req\/s cost \/ 1M output tokens \(EUR\) \|/m);

  const replayed = await bench(sim.url, { replay: [`${ROOT}test/fixtures/mooncake-hand-written-synthetic.jsonl`], replaySpeed: '1', replayCalibrate: 'false', duration: '60s' });
  assert.ok(validate(JSON.parse(JSON.stringify(replayed))), JSON.stringify(validate.errors));
  assert.equal(replayed.steps[0]!.mode, 'replay');
  console.log(`replay: ${JSON.stringify(checkStep(replayed.steps[0]!, slo))}`);
  assert.match(renderMarkdown(replayed), /^\| replay ×1 \| \d+ \| 2 \| 200 \|/m);
});

test('no GPU: steps[].energy is null and the report says why', { timeout: 30_000 }, async () => {
  sim ??= await startSimulator({ listen: '127.0.0.1:0', speed: 4 });
  const report = await bench(sim.url, { qps: '4', duration: '1s', nvidiaSmi: 'none' });
  assert.equal(report.steps[0]!.energy, null);
  assert.match(renderMarkdown(report), /Energy: no GPU reported power/);
});
