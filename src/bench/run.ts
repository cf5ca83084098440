/**
 * The benchmark procedure: environment record, warm-up (not counted), single-stream, then
 * one load step per request rate or concurrency, with GPU and engine sampled throughout.
 * Each request is sent and timed by the simulator's load generator (runLoad), which reads
 * streams with the proxy's own SSE framing and event rules: TTFT and TPOT mean here what
 * they mean in infermeter's metrics. An abort signal stops the run between or inside
 * phases; what was measured so far is returned, marked partial.
 */
import { performance } from 'node:perf_hooks';
import { Agent } from 'undici';
import { openArrivals, runLoad } from '../sim/load.js';
import type { ApiName } from '../record/routes.js';
import type { EngineKind } from '../lib/engines.js';
import type { Thresholds } from '../slo/config.js';
import { engineEnvironment, gpuEnvironment, hostEnvironment, infermeterVersion } from './environment.js';
import { Monitor } from './monitor.js';
import { filePrompts, syntheticPrompts, TOKEN_ESTIMATE, type PromptSet } from './prompts.js';
import { silentProgress, type Progress } from './progress.js';
import { REPORT_SCHEMA_VERSION, reportRoute, summarizePhase, summarizeResources, toSample, type BenchReport, type RequestSample, type StepReport } from './report.js';
import { PERCENTILE_METHOD } from './stats.js';
import { errorKinds } from './verdict.js';
import { analyzeSteps } from './analysis.js';
import { checkReplayModels, runReplay, type ReplayOptions, type SendSpec } from './replay/phase.js';
import { stepEnergy, type BenchPrices } from './energy.js';
import { aliasTable, INFERMETER_ALIASES } from '../collectors/engine/aliases.js';

export interface BenchOptions {
  target: string;
  model: string | null;
  /** The API benchmarked (--api; --route's `completion` is `completions`): chat, completions, messages or responses. */
  route: ApiName;
  inputTokens: number;
  outputTokens: number;
  promptsFile: string | null;
  warmup: number;
  requests: number;
  qps: number[];
  concurrency: number[];
  durationSeconds: number;
  arrivals: 'poisson' | 'constant';
  seed: number;
  slo: Thresholds;
  /** null: no GPU source at all; else the binary (absent → recorded as absent). */
  nvidiaSmi: string | null;
  /** null: target + /metrics (or --infermeter-metrics). "" turns engine sampling off. */
  engineMetrics: string | null;
  /**
   * --infermeter-metrics: the /metrics of the infermeter whose proxy --target is. Engine state is
   * read from its infermeter_engine_* series there, never through the proxy port. null: none.
   */
  infermeterMetrics?: string | null;
  /** --gpu-hour-cost, --energy-price, --currency: the prices of each step's cost per output token; absent: none. */
  prices?: BenchPrices;
  engine: string | null;
  sampleIntervalMs: number;
  /** The exact command line, for the record. */
  command: string[];
  /** `--replay`: replay workload traces instead of the single-stream and load steps. */
  replay?: ReplayOptions | null;
  env?: NodeJS.ProcessEnv;
}

/** Engines that take vLLM's `ignore_eos` (others may reject an unknown field). */
const IGNORE_EOS_ENGINES: readonly string[] = ['vllm', 'sglang', 'llamacpp'];

export interface BenchHooks {
  progress?: Progress;
  signal?: AbortSignal;
}

export const DEFINITIONS: Record<string, string> = {
  ttft: 'seconds from sending the request to the first chunk carrying a generated token (content, reasoning, tool call or text); role-only and empty chunks do not count',
  tpot: '(E2E - TTFT) / (output_tokens - 1), ok requests with at least 2 output tokens; the first token is excluded (as vllm bench serve)',
  e2e: 'seconds from sending the request to the last byte of the response',
  generationRate: '1 / TPOT per request, tokens per second',
  outputTokens: 'usage.completion_tokens from the stream (include_usage is asked for); the count of token-bearing chunks when the server sends no usage',
  percentiles: PERCENTILE_METHOD,
  requestsPerSecond: 'ok requests / phase seconds (first send to last finish)',
  outputTokensPerSecond: 'output tokens of ok requests / phase seconds',
  goodput: 'ok requests meeting every SLO / phase seconds',
  sloAttainment: 'good / judged per SLO; failed requests are bad on every SLO, TPOT is not judged for 1-token replies',
  tokenEstimate: TOKEN_ESTIMATE,
  energy: 'every GPU\'s power readings (nvidia-smi dmon) integrated as the daemon integrates them (the trapezoid between readings, docs/energy.md), from the step\'s first send to its last finish',
  joulesPerOutputToken: 'the step\'s energy / the output tokens of every request of the step (partial streams included)',
  joulesPerGoodOutputToken: 'the step\'s energy / the output tokens of ok requests meeting every SLO (goodput\'s requests); null without SLOs',
  costPerMillionOutputTokens: '(energy at --energy-price per kWh + GPU-seconds at --gpu-hour-cost per GPU-hour) / output tokens × 1e6; null without a price',
};

export async function runBench(o: BenchOptions, hooks: BenchHooks = {}): Promise<BenchReport> {
  const progress = hooks.progress ?? silentProgress();
  const origin = performance.now();
  const date = new Date().toISOString();
  const metricsUrl = o.engineMetrics === '' ? null : (o.engineMetrics ?? o.infermeterMetrics ?? `${o.target}/metrics`);
  const prices: BenchPrices = o.prices ?? { gpuHourCost: 0, energyPrice: 0, currency: 'USD' };
  const [gpu, engine] = await Promise.all([
    o.nvidiaSmi ? gpuEnvironment(o.nvidiaSmi, o.env) : Promise.resolve(null),
    engineEnvironment(o.target, metricsUrl, o.engine),
  ]);
  // Neither /version nor /v1/models got an HTTP answer: nothing to measure, and no report to write.
  const answered = (e: string | null) => e === null || /: (HTTP \d+|not JSON)$/.test(e);
  if (!answered(engine.versionError) && !answered(engine.modelsError)) throw new Error(`bench: cannot reach --target ${o.target}: ${engine.modelsError}`);
  const model = o.model ?? engine.models[0] ?? null;
  if (o.replay) checkReplayModels(o.replay.workload, engine.models, o.target);
  const ignoreEos = engine.kind !== null && IGNORE_EOS_ENGINES.includes(engine.kind);
  const prompts: PromptSet = o.promptsFile ? filePrompts(o.promptsFile) : syntheticPrompts(o.inputTokens, o.seed);
  const monitor = new Monitor({
    nvidiaSmi: gpu?.available ? o.nvidiaSmi : null,
    engineMetrics: metricsUrl,
    engine: (engine.kind ?? 'vllm') as EngineKind,
    aliases: o.infermeterMetrics && metricsUrl === o.infermeterMetrics ? INFERMETER_ALIASES : aliasTable((engine.kind ?? 'vllm') as EngineKind),
    intervalMs: o.sampleIntervalMs, origin, env: o.env,
  });
  if (gpu && !gpu.available) monitor.gpuError = gpu.error;
  const report: BenchReport = {
    schemaVersion: REPORT_SCHEMA_VERSION,
    partial: false,
    partialReason: null,
    environment: {
      date, command: o.command, infermeterVersion: infermeterVersion(), host: hostEnvironment(),
      gpu: gpu ?? { available: false, error: 'GPU sampling off', count: 0, models: [], driverVersion: null, cudaVersion: null, gpus: [] },
      engine,
    },
    config: {
      target: o.target, model, route: reportRoute(o.route), inputTokens: o.promptsFile || o.replay ? null : o.inputTokens, outputTokens: o.outputTokens,
      prompts: o.replay ? `replayed traces: ${o.replay.files.join(', ')}` : prompts.source, tokenEstimate: TOKEN_ESTIMATE, ignoreEos, warmup: o.warmup, requests: o.requests,
      qps: o.qps, concurrency: o.concurrency, durationSeconds: o.durationSeconds, arrivals: o.arrivals, seed: o.seed,
      slo: o.slo, engineMetrics: metricsUrl, infermeterMetrics: o.infermeterMetrics ?? null, sampleIntervalSeconds: o.sampleIntervalMs / 1000,
      prices,
    },
    definitions: DEFINITIONS,
    warmup: { requests: 0, ok: 0 },
    singleStream: null,
    steps: [],
    monitor: { intervalSeconds: o.sampleIntervalMs / 1000, gpu: monitor.gpu, engine: monitor.engine, gpuError: null, engineError: null },
  };

  const agent = new Agent({ keepAliveTimeout: 10_000, connections: null });
  let aborted = hooks.signal?.aborted ?? false;
  const onAbort = () => {
    aborted = true;
    // Streams in flight end now (the server stops generating for them); they are client_abort.
    void agent.destroy().catch(() => undefined);
  };
  hooks.signal?.addEventListener('abort', onAbort, { once: true });
  let next = 0; // prompts are used in order across phases, so each is sent once
  const sendSpec = async (spec: SendSpec, phaseStart: number) => {
    const index = next++;
    const sent = (performance.now() - phaseStart) / 1000;
    const asked = spec.model ?? model;
    const run = await runLoad({
      url: o.target, ...(asked ? { model: asked } : {}), route: spec.api, requests: 1, maxTokens: spec.maxTokens, ignoreEos,
      stream: spec.stream, prompt: spec.prompt, dispatcher: agent,
    });
    const r = run.results[0]!;
    r.index = index;
    return { sample: toSample(r, sent, aborted), cachedTokens: r.cachedTokens };
  };
  const send = async (phaseStart: number): Promise<RequestSample> =>
    (await sendSpec({ api: o.route, model: null, maxTokens: o.outputTokens, stream: true, prompt: prompts.prompt(next) }, phaseStart)).sample;

  monitor.start();
  try {
    if (o.replay) {
      const done = await runReplay(o.replay, {
        send: sendSpec, warmup: o.warmup, slo: o.slo, ignoreEos, engineKind: engine.kind, monitor, origin, progress, aborted: () => aborted,
      });
      report.warmup = done.warmup;
      if (done.step) report.steps.push(done.step);
      report.replay = done.replay;
    }
    if (o.warmup > 0 && !aborted && !o.replay) {
      progress.phase(`warm-up (${o.warmup} requests, not counted)`);
      const samples = await sequential(o.warmup, send, progress, () => aborted);
      report.warmup = { requests: samples.length, ok: samples.filter((s) => s.outcome === 'ok').length };
      progress.done(`${report.warmup.ok}/${report.warmup.requests} ok${errorsNote(samples)}`);
    }
    if (o.requests > 0 && !aborted && !o.replay) {
      progress.phase(`single-stream (${o.requests} requests, one at a time)`);
      await monitor.sampleEngine();
      const t0 = performance.now();
      const samples = await sequential(o.requests, send, progress, () => aborted);
      const summary = summarizePhase(samples, (performance.now() - t0) / 1000, o.slo, o.outputTokens);
      await monitor.sampleEngine();
      const window = monitor.between((t0 - origin) / 1000, (performance.now() - origin) / 1000);
      report.singleStream = { startedAt: (t0 - origin) / 1000, summary, resources: summarizeResources(window.gpu, window.engine, window.before), requests: samples };
      progress.done(`TTFT p50 ${ms(summary.ttft.p50)}, TPOT p50 ${ms(summary.tpot.p50)}, ${summary.ok}/${summary.requests} ok${errorsNote(samples)}`);
    }
    const steps = o.replay ? [] : [...o.qps.map((v) => ({ mode: 'rate' as const, load: v })), ...o.concurrency.map((v) => ({ mode: 'concurrency' as const, load: v }))];
    for (const [i, step] of steps.entries()) {
      if (aborted) break;
      const label = step.mode === 'rate' ? `${step.load} req/s ${o.arrivals}` : `concurrency ${step.load}`;
      progress.phase(`step ${i + 1}/${steps.length}: ${label} for ${o.durationSeconds}s`);
      const t0 = performance.now();
      const startedAt = (t0 - origin) / 1000;
      const stop = () => aborted || performance.now() - t0 >= o.durationSeconds * 1000;
      const samples = step.mode === 'rate'
        ? await openLoop(step.load, o.arrivals, o.seed + i, stop, send, t0, o.durationSeconds, progress)
        : await closedLoop(step.load, stop, send, t0, o.durationSeconds, progress);
      const summary = summarizePhase(samples, (performance.now() - t0) / 1000, o.slo, o.outputTokens);
      await monitor.sampleEngine();
      const window = monitor.between(startedAt, (performance.now() - origin) / 1000);
      const result: StepReport = {
        mode: step.mode, load: step.load, arrivals: step.mode === 'rate' ? o.arrivals : null, durationSeconds: o.durationSeconds,
        startedAt, summary, resources: summarizeResources(window.gpu, window.engine, window.before), requests: samples,
      };
      report.steps.push(result);
      progress.done(`${summary.requestsPerSecond.toFixed(2)} req/s, ${summary.outputTokensPerSecond.toFixed(0)} tok/s, TTFT p99 ${ms(summary.ttft.p99)}, TPOT p99 ${ms(summary.tpot.p99)}${summary.goodput === null ? '' : `, goodput ${summary.goodput.toFixed(2)} req/s`}, ${summary.ok}/${summary.requests} ok${errorsNote(samples)}`);
    }
  } finally {
    hooks.signal?.removeEventListener('abort', onAbort);
    // The last step's energy is read up to its end, not extrapolated past the last reading.
    if (!aborted) await monitor.gpuReadThrough((performance.now() - origin) / 1000);
    await monitor.stop();
    if (!aborted) await agent.close();
    progress.close();
  }
  for (const step of report.steps) step.energy = stepEnergy({ from: step.startedAt, to: step.startedAt + step.summary.seconds }, monitor.gpu, step.requests, o.slo, prices);
  analyzeSteps(report);
  report.monitor.gpuError = monitor.gpuError;
  report.monitor.engineError = monitor.engineError;
  if (aborted) {
    report.partial = true;
    report.partialReason = 'interrupted (SIGINT/abort): phases after the interruption did not run; requests cut short are counted as client_abort';
  }
  return report;
}

type Send = (phaseStart: number) => Promise<RequestSample>;

async function sequential(count: number, send: Send, progress: Progress, stopped: () => boolean): Promise<RequestSample[]> {
  const t0 = performance.now();
  const out: RequestSample[] = [];
  for (let i = 0; i < count && !stopped(); i++) {
    out.push(await send(t0));
    progress.update((i + 1) / count, `${i + 1}/${count}`);
  }
  return out;
}

/** Arrivals at a rate whatever the server's speed (open loop), until stop(); then waits for all. */
async function openLoop(rate: number, arrivals: 'poisson' | 'constant', seed: number, stop: () => boolean, send: Send, t0: number, seconds: number, progress: Progress): Promise<RequestSample[]> {
  const pending: Promise<RequestSample>[] = [];
  let done = 0;
  await openArrivals({ rate, arrivals, seed }, t0, () => !stop(), () => {
    pending.push(send(t0).then((s) => (done++, s)));
    progress.update((performance.now() - t0) / (seconds * 1000), `sent ${pending.length}, done ${done}`);
  });
  const ticker = setInterval(() => progress.update(1, `draining: ${pending.length - done} in flight`), 500);
  try {
    return await Promise.all(pending);
  } finally {
    clearInterval(ticker);
  }
}

/** Exactly n requests in flight (closed loop) until stop(); then waits for those in flight. */
async function closedLoop(n: number, stop: () => boolean, send: Send, t0: number, seconds: number, progress: Progress): Promise<RequestSample[]> {
  const out: RequestSample[] = [];
  const worker = async () => {
    while (!stop()) {
      out.push(await send(t0));
      progress.update((performance.now() - t0) / (seconds * 1000), `done ${out.length}`);
    }
  };
  await Promise.all(Array.from({ length: n }, worker));
  return out.sort((a, b) => a.start - b.start);
}

function errorsNote(samples: readonly RequestSample[]): string {
  const kinds = errorKinds(samples);
  return kinds.length ? `; errors: ${kinds.join(', ')}` : '';
}

function ms(seconds: number | null): string {
  return seconds === null ? '-' : `${(seconds * 1000).toFixed(1)} ms`;
}
