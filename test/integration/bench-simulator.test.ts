// test-group: alone (latency rising with load, read from the simulator's timing)
/**
 * `infermeter bench` against the simulator with known settings: single-stream figures match
 * the configuration, latency rises under load, goodput falls when the SLO is tight, GPU
 * (fake nvidia-smi) and engine state are sampled, and the report files are valid.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSimulator } from '../../src/sim/index.js';
import { runBench } from '../../src/bench/run.js';
import { summarizePhase } from '../../src/bench/report.js';
import { writeReport } from '../../src/bench/write.js';
import { renderMarkdown } from '../../src/bench/markdown.js';
import { reportValidator } from '../unit/bench/fixture.js';
import { benchOptions, FAKE_NVIDIA_SMI } from './bench-helpers.js';

test('bench against the simulator: figures follow its settings and its load', { timeout: 60_000 }, async () => {
  // One step: 10 ms + 0.5 ms per running sequence; prefill 20k tok/s, so 400 prompt tokens ≈ 20 ms.
  const sim = await startSimulator({ listen: '127.0.0.1:0', decodeStepMs: 10, stepPerSeqMs: 0.5, prefillTps: 20_000, maxNumSeqs: 4, prefixCaching: false });
  const out = mkdtempSync(join(tmpdir(), 'bench-'));
  try {
    const report = await runBench(benchOptions(sim.url, {
      concurrency: [1, 12], slo: { ttft: 0.1 }, nvidiaSmi: FAKE_NVIDIA_SMI, engineMetrics: null,
      env: { ...process.env, FAKE_NVIDIA_SMI_SIM_URL: sim.url, FAKE_NVIDIA_SMI_PERIOD_MS: '200' },
    }));
    const ss = report.singleStream!.summary;
    assert.equal(ss.ok, 8);
    assert.equal(ss.outputLengthMatched, 8, 'ignore_eos sent to vLLM: every reply is max_tokens long');
    assert.equal(report.config['ignoreEos'], true);
    // TPOT ≈ one decode step with one sequence (10.5 ms); TTFT ≈ prefill (20 ms) + that step.
    assert.ok(ss.tpot.p50! > 0.009 && ss.tpot.p50! < 0.016, `TPOT p50 ${ss.tpot.p50}`);
    assert.ok(ss.ttft.p50! > 0.027 && ss.ttft.p50! < 0.06, `TTFT p50 ${ss.ttft.p50}`);
    assert.ok(Math.abs(ss.generationRate.p50! - 1 / ss.tpot.p50!) / ss.generationRate.p50! < 0.2);
    assert.equal(ss.promptTokens.p50, 400);

    const [c1, c12] = report.steps;
    assert.equal(c1!.mode, 'concurrency');
    // 12 in flight with 4 batch slots: queueing lifts TTFT, a fuller batch lifts TPOT.
    assert.ok(c12!.summary.ttft.p50! > c1!.summary.ttft.p50! * 1.5, `TTFT ${c1!.summary.ttft.p50} → ${c12!.summary.ttft.p50}`);
    assert.ok(c12!.summary.tpot.p50! > c1!.summary.tpot.p50!, `TPOT ${c1!.summary.tpot.p50} → ${c12!.summary.tpot.p50}`);
    assert.ok(c12!.summary.outputTokensPerSecond > c1!.summary.outputTokensPerSecond * 1.5);
    // Goodput: with a 100 ms TTFT SLO, the queued step loses requests; tighter SLOs lose more.
    const ratio = (s: typeof c1) => s!.summary.goodRequests! / s!.summary.ok;
    assert.ok(ratio(c12) < ratio(c1), `good fraction ${ratio(c1)} → ${ratio(c12)}`);
    const tight = summarizePhase(c12!.requests, c12!.summary.seconds, { ttft: c1!.summary.ttft.p50! }, 16);
    assert.ok(tight.goodput! < c12!.summary.goodput!);
    // GPU (fake nvidia-smi following the simulator) and engine state were sampled per step.
    assert.ok(report.monitor.gpu.length > 0 && report.monitor.engine.length > 0, `${report.monitor.gpuError} / ${report.monitor.engineError}`);
    assert.equal((report.environment['gpu'] as { available: boolean }).available, true);
    assert.equal((report.environment['engine'] as { kind: string }).kind, 'vllm');
    assert.ok(c12!.resources.requestsRunning.mean! > c1!.resources.requestsRunning.mean!);
    assert.ok(c12!.resources.requestsWaiting.max! > 0);
    assert.ok(c12!.resources.kvCacheUsage.max! > 0);
    assert.ok(c12!.resources.gpuUtilization.samples > 0);

    const paths = writeReport(out, report);
    const validate = reportValidator();
    assert.ok(validate(JSON.parse(readFileSync(paths.json, 'utf8'))), JSON.stringify(validate.errors));
    assert.match(readFileSync(paths.markdown, 'utf8'), /^\| c=12 \|/m);
    assert.match(readFileSync(paths.html, 'utf8'), /<svg /);
  } finally {
    await sim.close();
    rmSync(out, { recursive: true, force: true });
  }
});

test('rate steps: open-loop arrivals at the asked rate; an absent nvidia-smi is recorded, not an error', { timeout: 60_000 }, async () => {
  const sim = await startSimulator({ listen: '127.0.0.1:0', decodeStepMs: 5, prefillTps: 0, speed: 1 });
  try {
    const report = await runBench(benchOptions(sim.url, { warmup: 0, requests: 0, qps: [20], arrivals: 'constant', durationSeconds: 1, nvidiaSmi: '/nonexistent/nvidia-smi' }));
    const step = report.steps[0]!;
    assert.ok(step.requests.length >= 17 && step.requests.length <= 21, `${step.requests.length} sent in 1 s at 20 req/s`);
    assert.equal(step.summary.ok, step.requests.length);
    const gpu = report.environment['gpu'] as { available: boolean; error: string };
    assert.equal(gpu.available, false);
    assert.match(gpu.error, /not found/);
    assert.equal(report.singleStream, null);
  } finally {
    await sim.close();
  }
});

test('a rerun with the same seed finds its prompts in the prefix cache, and the report warns', { timeout: 60_000 }, async () => {
  const sim = await startSimulator({ listen: '127.0.0.1:0', decodeStepMs: 5, prefillTps: 10_000, prefixCaching: 'true' });
  try {
    const opts = benchOptions(sim.url, { warmup: 0, requests: 4, inputTokens: 800, outputTokens: 4, engineMetrics: null });
    const first = await runBench(opts);
    const again = await runBench(opts);
    const ratio = (r: typeof first) => r.singleStream!.resources.prefixCacheHitRatio!;
    assert.ok(ratio(first) < 0.1, `first run ${ratio(first)}`);
    assert.ok(ratio(again) > 0.8, `rerun ${ratio(again)}`);
    assert.ok(again.singleStream!.summary.ttft.p50! < first.singleStream!.summary.ttft.p50!);
    assert.doesNotMatch(renderMarkdown(first), /Warning/);
    assert.match(renderMarkdown(again), /\*\*Warning\*\*: the engine found \d+% of prompt tokens \(single stream\) in its prefix cache/);
  } finally {
    await sim.close();
  }
});
