/** `infermeter bench` flags → BenchOptions; fails fast naming the bad flag (exit 2). */
import { ConfigError } from '../lib/errors.js';
import { oneOf, parseBool, parseCurrency, parseDuration, parseHttpUrl, parseList, parsePrice } from '../lib/parse.js';
import { SLO_NAMES, type Thresholds } from '../slo/config.js';
import { loadConfigFile, type Config } from '../config.js';
import { ENGINES } from '../lib/engines.js';
import { BENCH_SLOS } from './report.js';
import { APIS } from '../record/routes.js';
import type { BenchOptions } from './run.js';
import type { BenchPrices } from './energy.js';
import { readTraceFile } from './replay/trace.js';
import { buildWorkload, parseModelMap } from './replay/workload.js';
import type { ReplayOptions } from './replay/phase.js';

export interface BenchFlags {
  target?: string;
  model?: string;
  route: string;
  /** --api: the generation API (chat, completions, messages, responses); --route is its older name. */
  api?: string;
  inputTokens: string;
  outputTokens: string;
  prompts?: string;
  warmup: string;
  requests: string;
  qps?: string;
  concurrency?: string;
  duration: string;
  arrivals: string;
  seed: string;
  slo?: string;
  /** An infermeter config file: validated whole; its slos.default thresholds are the goodput SLOs unless --slo is given. */
  config?: string;
  out?: string;
  nvidiaSmi: string;
  engineMetrics?: string;
  /** The metrics listener of the infermeter whose proxy --target is (its base URL or its /metrics). */
  infermeterMetrics?: string;
  engine?: string;
  sampleInterval: string;
  maxErrorRate?: string;
  /** --replay FILE...: workload traces to replay instead of the synthetic phases. */
  replay?: string[];
  replaySpeed?: string;
  /** --replay-model FROM=TO, repeatable. */
  replayModel?: string[];
  replayCalibrate?: string;
  /** Prices, as serve reads them (config/flags.ts); unset: --config's, else none. */
  gpuHourCost?: string;
  energyPrice?: string;
  currency?: string;
}

export const DEFAULT_QPS = '1,4,8,16,32';

/** --route, --api's older name, spells the completions API as bench.json does (report.ts reportRoute). */
const ROUTE_FLAG = { completion: 'completions', chat: 'chat' } as const;

function flag<T>(name: string, f: () => T): T {
  try {
    return f();
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    throw new ConfigError(name, (err as Error).message, { cause: err });
  }
}

function count(v: string, min: number): number {
  const n = Number(v.trim());
  if (!Number.isInteger(n) || n < min) throw new Error(`expected a whole number ≥ ${min}, got "${v}"`);
  return n;
}

function positiveList(v: string | undefined): number[] {
  if (v === undefined || ['', 'none'].includes(v.trim())) return [];
  return parseList(v).map((s) => {
    const n = Number(s);
    if (!(n > 0) || !Number.isFinite(n)) throw new Error(`expected positive numbers separated by commas, got "${v}"`);
    return n;
  });
}

/** "ttft=500ms,tpot=50ms,e2e=3s" → seconds per SLO name. */
export function parseSloFlag(v: string | undefined): Thresholds {
  const out: Thresholds = {};
  if (!v) return out;
  for (const part of parseList(v)) {
    const m = /^([a-z0-9]+)\s*[=:]\s*(.+)$/i.exec(part);
    if (!m) throw new Error(`expected NAME=DURATION pairs such as ttft=500ms,tpot=50ms, got "${part}"`);
    const name = m[1]!.toLowerCase();
    if (name === 'ttfo') throw new Error('ttfo is not judged by bench: the client times the first token of any kind (TTFT); use ttft');
    if (!(SLO_NAMES as readonly string[]).includes(name) || !(BENCH_SLOS as readonly string[]).includes(name)) throw new Error(`unknown SLO "${name}"; expected ${BENCH_SLOS.join(', ')}`);
    const seconds = parseDuration(m[2]!);
    if (!(seconds > 0)) throw new Error(`${name}: the threshold must be greater than 0`);
    out[name as (typeof BENCH_SLOS)[number]] = seconds;
  }
  return out;
}

/** The thresholds bench judges (TTFO is not: the client sees a first token of any kind). */
function benchSlosOf(t: Thresholds): Thresholds {
  const out: Thresholds = {};
  for (const name of BENCH_SLOS) if (t[name] !== undefined) out[name] = t[name];
  return out;
}

function ratio(v: string): number {
  const n = Number(v.trim());
  if (v.trim() === '' || !(n >= 0 && n <= 1)) throw new Error(`expected a share from 0 to 1 such as 0.05, got "${v}"`);
  return n;
}

export function resolveBenchOptions(f: BenchFlags, command: string[]): BenchOptions & { out: string; maxErrorRate: number | null } {
  if (!f.target) throw new ConfigError('--target', 'required: the inference server URL, e.g. http://127.0.0.1:8000');
  const target = flag('--target', () => parseHttpUrl(f.target!));
  const replay = f.replay === undefined ? null : replayOptions(f);
  const noSteps = f.qps === undefined && f.concurrency === undefined && replay === null;
  const file = f.config ? loadConfigFile(f.config) : null;
  if (f.engineMetrics !== undefined && f.infermeterMetrics !== undefined) throw new ConfigError('--infermeter-metrics', 'not with --engine-metrics: engine state is read from one of them');
  const opts: BenchOptions = {
    target,
    model: f.model ?? null,
    route: f.api !== undefined
      ? flag('--api', () => oneOf(APIS)(f.api!))
      : flag('--route', () => ROUTE_FLAG[oneOf(['completion', 'chat'] as const)(f.route)]),
    inputTokens: flag('--input-tokens', () => count(f.inputTokens, 1)),
    outputTokens: flag('--output-tokens', () => count(f.outputTokens, 1)),
    promptsFile: f.prompts ?? null,
    warmup: flag('--warmup', () => count(f.warmup, 0)),
    requests: flag('--requests', () => count(f.requests, 0)),
    qps: flag('--qps', () => positiveList(noSteps ? DEFAULT_QPS : f.qps)),
    concurrency: flag('--concurrency', () => positiveList(f.concurrency).map((n) => {
      if (!Number.isInteger(n)) throw new Error(`expected whole numbers, got ${n}`);
      return n;
    })),
    durationSeconds: flag('--duration', () => {
      const s = parseDuration(f.duration);
      if (!(s > 0)) throw new Error('must be greater than 0');
      return s;
    }),
    arrivals: flag('--arrivals', () => oneOf(['poisson', 'constant'] as const)(f.arrivals)),
    seed: flag('--seed', () => count(f.seed, 0)),
    slo: f.slo === undefined && file ? benchSlosOf(file.slos.default) : flag('--slo', () => parseSloFlag(f.slo)),
    nvidiaSmi: f.nvidiaSmi === 'none' ? null : f.nvidiaSmi,
    engineMetrics: f.engineMetrics === 'none' ? '' : f.engineMetrics === undefined ? null : flag('--engine-metrics', () => parseHttpUrl(f.engineMetrics!)),
    infermeterMetrics: f.infermeterMetrics === undefined ? null : flag('--infermeter-metrics', () => metricsPath(parseHttpUrl(f.infermeterMetrics!))),
    prices: prices(f, file),
    engine: f.engine === undefined ? null : flag('--engine', () => oneOf(ENGINES)(f.engine!)),
    sampleIntervalMs: flag('--sample-interval', () => Math.max(100, parseDuration(f.sampleInterval) * 1000)),
    command,
    replay,
  };
  const out = f.out ?? `bench-${new Date().toISOString().replace(/[:.]/g, '-').slice(0, 19)}`;
  const maxErrorRate = f.maxErrorRate === undefined ? null : flag('--max-error-rate', () => ratio(f.maxErrorRate!));
  return { ...opts, out, maxErrorRate };
}

/** A metrics listener's base URL → its /metrics. */
function metricsPath(url: string): string {
  return /\/metrics$/.test(url) ? url : `${url}/metrics`;
}

/** Each price from its flag, else from --config's file (where serve would read it), else none. */
function prices(f: BenchFlags, file: Config | null): BenchPrices {
  const p: BenchPrices = {
    gpuHourCost: f.gpuHourCost === undefined ? (file?.gpuHourCost ?? 0) : flag('--gpu-hour-cost', () => parsePrice(f.gpuHourCost!)),
    energyPrice: f.energyPrice === undefined ? (file?.energyPrice ?? 0) : flag('--energy-price', () => parsePrice(f.energyPrice!)),
    currency: f.currency === undefined ? (file?.currency ?? 'USD') : flag('--currency', () => parseCurrency(f.currency!)),
  };
  if (p.currency === '' && (p.gpuHourCost > 0 || p.energyPrice > 0)) throw new ConfigError('--currency', 'is required with a price (--gpu-hour-cost, --energy-price): the currency the prices are in, e.g. USD');
  return p;
}

/** --replay and its companions; the traces are read now, so a bad line stops the bench before it starts (exit 2). */
function replayOptions(f: BenchFlags): ReplayOptions {
  for (const [name, v] of [['--qps', f.qps], ['--concurrency', f.concurrency], ['--prompts', f.prompts]] as const) {
    if (v !== undefined) throw new ConfigError(name, 'not with --replay: a replay sends the traces\' requests at their recorded times, with prompts built from their lengths and hash ids');
  }
  const files = f.replay!;
  if (files.length === 0) throw new ConfigError('--replay', 'expected one or more trace files');
  const speed = flag('--replay-speed', () => {
    const v = f.replaySpeed ?? '1';
    const n = Number(v.trim());
    if (v.trim() === '' || !(n > 0) || !Number.isFinite(n)) throw new Error(`expected a factor > 0 such as 2 (twice as fast) or 0.5, got "${v}"`);
    return n;
  });
  const models = flag('--replay-model', () => parseModelMap(f.replayModel ?? []));
  const calibrate = flag('--replay-calibrate', () => parseBool(f.replayCalibrate ?? 'true'));
  const api = f.api === undefined ? undefined : flag('--api', () => oneOf(APIS)(f.api!));
  const traces = files.map((p) => readTraceFile(p, '--replay'));
  const seed = flag('--seed', () => count(f.seed, 0));
  return { files, workload: buildWorkload(traces, speed, models, api), speed, models: Object.fromEntries(models), calibrate, seed };
}
