/**
 * `bench --replay`'s measured part, after the environment record: calibrate the target's
 * token count (calibrate.ts), warm up on the trace's shapes with fresh text, then send every
 * request of the workload at its recorded time (over --replay-speed) whatever the server's
 * speed (open loop), and set the recorded run beside the replayed one.
 */
import { performance } from 'node:perf_hooks';
import type { ApiName } from '../../record/routes.js';
import type { Thresholds } from '../../slo/config.js';
import type { Monitor } from '../monitor.js';
import type { Progress } from '../progress.js';
import { summarizePhase, summarizeResources, type RequestSample, type StepReport } from '../report.js';
import { distribution } from '../stats.js';
import { calibrate, scaleFor, type Calibration } from './calibrate.js';
import { replayPrompt } from './prompts.js';
import { cachedAgreement, lengthAgreement, recordedSide, replayedSide } from './sides.js';
import { engineSizeCache, traceStats, unboundedCache } from './stats.js';
import type { ReplayReport } from './types.js';
import { unservedModels, type ReplayRequest, type Workload } from './workload.js';
import { ConfigError } from '../../lib/errors.js';

export interface ReplayOptions {
  files: string[];
  workload: Workload;
  speed: number;
  /** --replay-model, as given. */
  models: Record<string, string>;
  /** Measure the target's tokens per API and model before the replay (default), or assume a token per word. */
  calibrate: boolean;
  /**
   * --seed: the text of every block and remainder. The same seed replays the same text (an
   * engine still holding it from an earlier replay finds it cached); another seed, other text.
   */
  seed: number;
}

/** One request as the replay asks for it. */
export interface SendSpec {
  api: ApiName;
  /** null: the bench's model. */
  model: string | null;
  maxTokens: number;
  stream: boolean;
  prompt: string;
}

export interface ReplayContext {
  /** Sends one request, timed from phaseStart (performance.now()). */
  send(spec: SendSpec, phaseStart: number): Promise<{ sample: RequestSample; cachedTokens: number | null }>;
  warmup: number;
  slo: Thresholds;
  ignoreEos: boolean;
  /** The engine's kind when known: where it takes no ignore-EOS option, the report says so. */
  engineKind: string | null;
  monitor: Monitor;
  origin: number;
  progress: Progress;
  aborted(): boolean;
}

/**
 * Stops before anything is sent when the trace asks for a model the target does not serve:
 * every request would fail, and the fix is a flag.
 */
export function checkReplayModels(w: Workload, served: readonly string[], target: string): void {
  const missing = unservedModels(w, served);
  if (missing.length === 0) return;
  const to = served[0]!;
  throw new ConfigError('--replay-model', `the trace asks for ${missing.join(', ')}, which ${target} does not serve (it serves ${served.join(', ')}): map ${missing.length === 1 ? 'it' : 'them'}, e.g. ${missing.map((m) => `--replay-model ${m}=${to}`).join(' ')}`);
}

/** Warm-up replies are cut to this many tokens: the warm-up opens connections, it does not load the server. */
const WARMUP_MAX_TOKENS = 16;

export async function runReplay(o: ReplayOptions, ctx: ReplayContext): Promise<{ warmup: { requests: number; ok: number }; step: StepReport | null; replay: ReplayReport }> {
  const w = o.workload;
  const { progress } = ctx;
  let calibration: Calibration[] | null = null;
  if (o.calibrate && !ctx.aborted()) {
    const pairs = distinctPairs(w.requests);
    progress.phase(`calibrating the target's token count (${pairs.length} API/model pair${pairs.length === 1 ? '' : 's'})`);
    calibration = await calibrate(pairs, async (api, model, prompt) => {
      const { sample } = await ctx.send({ api, model, maxTokens: 1, stream: true, prompt }, performance.now());
      return { promptTokens: sample.outcome === 'ok' ? sample.promptTokens : null, error: sample.error };
    });
    progress.done(calibration.map((c) => `${c.api}${c.model ? ` ${c.model}` : ''}: ${c.fallback ?? `${c.tokensPerWord.toFixed(3)} tokens/word, template ${c.overhead} tokens`}`).join('; '));
  }
  const scale = (r: ReplayRequest) => scaleFor(calibration, r.api, r.model);

  const warmup = { requests: 0, ok: 0 };
  if (ctx.warmup > 0 && !ctx.aborted()) {
    progress.phase(`warm-up (${ctx.warmup} requests of the trace's shapes, fresh text, not counted)`);
    for (let i = 0; i < ctx.warmup && !ctx.aborted(); i++) {
      const r = w.requests[i % w.requests.length]!;
      const { sample } = await ctx.send({ api: r.api, model: r.model, stream: r.stream, maxTokens: Math.min(WARMUP_MAX_TOKENS, Math.max(1, r.record.outputLength)), prompt: replayPrompt(r, scale(r), `warmup ${o.seed} ${i}`) }, performance.now());
      warmup.requests++;
      if (sample.outcome === 'ok') warmup.ok++;
      progress.update((i + 1) / ctx.warmup, `${i + 1}/${ctx.warmup}`);
    }
    progress.done(`${warmup.ok}/${warmup.requests} ok`);
  }

  let step: StepReport | null = null;
  let samples: RequestSample[] = [];
  let seconds = 0;
  let resources = summarizeResources([], []);
  if (!ctx.aborted()) {
    progress.phase(`replay: ${w.requests.length} requests over ${(w.recordedSpanMs / 1000 / o.speed).toFixed(1)} s (×${o.speed})`);
    await ctx.monitor.sampleEngine();
    const t0 = performance.now();
    const startedAt = (t0 - ctx.origin) / 1000;
    samples = await schedule(w.requests, t0, ctx, (r) => replayPrompt(r, scale(r), `replay ${o.seed}`));
    seconds = (performance.now() - t0) / 1000;
    await ctx.monitor.sampleEngine();
    const window = ctx.monitor.between(startedAt, (performance.now() - ctx.origin) / 1000);
    resources = summarizeResources(window.gpu, window.engine, window.before);
    step = { mode: 'replay', load: o.speed, arrivals: 'trace', durationSeconds: w.recordedSpanMs / 1000 / o.speed, startedAt, summary: replaySummary(samples, seconds, ctx.slo), resources, requests: samples };
    const s = step.summary;
    progress.done(`${s.ok}/${s.requests} ok, ${s.requestsPerSecond.toFixed(2)} req/s, TTFT p99 ${ms(s.ttft.p99)}, TPOT p99 ${ms(s.tpot.p99)}`);
  }
  // Beside the unbounded row, a cache of the target engine's size where it reports one (vLLM's cache_config_info, SGLang's pool).
  const cfg = ctx.monitor.cacheConfig;
  const traceBlockTokens = w.files[0]?.meta.blockSize ?? 512;
  const sizes = new Set(w.files.map((f) => f.meta.blockSize));
  const sized = cfg?.tokens != null && cfg.tokens >= traceBlockTokens && sizes.size === 1
    ? [engineSizeCache({ blocks: Math.floor(cfg.tokens / (cfg.blockSize ?? 1)), blockTokens: cfg.blockSize ?? 1, traceBlockTokens })] : [];
  const stats = traceStats(w, { models: [unboundedCache(), ...sized] });
  return {
    warmup, step,
    replay: {
      files: stats.files, speed: o.speed, models: o.models, calibration,
      ignoreEos: ctx.ignoreEos,
      ignoreEosNote: ctx.ignoreEos ? null : `${ctx.engineKind ?? 'the engine (kind not detected)'} takes no ignore-EOS option known to infermeter: replies may end before the recorded output length (max_tokens is still sent)`,
      notes: w.notes,
      recordedSpanSeconds: w.recordedSpanMs / 1000,
      recorded: recordedSide(w, ctx.slo),
      replayed: replayedSide(samples, seconds, ctx.slo, resources),
      inputLength: lengthAgreement(samples, 'input'),
      outputLength: lengthAgreement(samples, 'output'),
      cachedTokens: cachedAgreement(samples),
      sendLag: distribution(samples.map((x) => x.start - x.replay!.scheduled)),
      reuse: stats.reuse,
    },
  };
}

/** The step summary, with the output length matched per request (each asked its own max_tokens). */
function replaySummary(samples: readonly RequestSample[], seconds: number, slo: Thresholds): StepReport['summary'] {
  const s = summarizePhase(samples, seconds, slo, 0);
  s.outputLengthMatched = samples.filter((x) => x.outcome === 'ok' && x.outputTokens === Math.max(1, x.replay!.outputLength)).length;
  return s;
}

/** Every request at its time, whatever the server's speed; then waits for all. */
async function schedule(reqs: readonly ReplayRequest[], t0: number, ctx: ReplayContext, prompt: (r: ReplayRequest) => string): Promise<RequestSample[]> {
  const pending: Promise<RequestSample>[] = [];
  let done = 0;
  for (const r of reqs) {
    while (!ctx.aborted()) {
      const wait = t0 + r.atMs - performance.now();
      if (wait <= 0) break;
      await sleep(Math.min(wait, 250));
      ctx.progress.update(Math.min(1, (performance.now() - t0) / Math.max(1, reqs[reqs.length - 1]!.atMs)), `sent ${pending.length}, done ${done}`);
    }
    if (ctx.aborted()) break;
    const spec: SendSpec = { api: r.api, model: r.model, stream: r.stream, maxTokens: Math.max(1, r.record.outputLength), prompt: prompt(r) };
    pending.push(ctx.send(spec, t0).then(({ sample, cachedTokens }) => {
      done++;
      sample.replay = {
        file: r.file, line: r.record.line, scheduled: r.atMs / 1000, api: r.api, model: r.model, stream: r.stream,
        inputLength: r.record.inputLength, outputLength: r.record.outputLength, cachedTokens, recordedCachedTokens: r.record.cachedInputTokens,
      };
      return sample;
    }));
  }
  const ticker = setInterval(() => ctx.progress.update(1, `draining: ${pending.length - done} in flight`), 500);
  try {
    return await Promise.all(pending);
  } finally {
    clearInterval(ticker);
  }
}

/** Distinct API and model pairs, each with its longest prompt (the calibration's long probe fits it). */
function distinctPairs(reqs: readonly ReplayRequest[]): { api: ApiName; model: string | null; longest: number }[] {
  const out = new Map<string, { api: ApiName; model: string | null; longest: number }>();
  for (const r of reqs) {
    const key = `${r.api}\u0000${r.model ?? ''}`;
    const p = out.get(key) ?? { api: r.api, model: r.model, longest: 0 };
    p.longest = Math.max(p.longest, r.record.inputLength);
    out.set(key, p);
  }
  return [...out.values()];
}

function sleep(msDelay: number): Promise<void> {
  return new Promise((r) => setTimeout(r, msDelay));
}

function ms(seconds: number | null): string {
  return seconds === null ? '-' : `${(seconds * 1000).toFixed(1)} ms`;
}
