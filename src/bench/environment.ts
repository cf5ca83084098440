/**
 * The environment record: what ran, where, with what. Every source may be absent (no GPU,
 * an engine without /version): absence is recorded, never an error.
 */
import os from 'node:os';
import { readFileSync } from 'node:fs';
import { request } from 'undici';
import { runCommand } from '../lib/spawn.js';
import { parseQueryCsv, queryNumber } from '../collectors/gpu/query.js';
import { MIB } from '../collectors/gpu/columns.js';
import { ENGINES, type EngineKind } from '../lib/engines.js';

export interface GpuEnvironment {
  available: boolean;
  error: string | null;
  count: number;
  /** Distinct models, e.g. ["NVIDIA H100 80GB HBM3"]. */
  models: string[];
  driverVersion: string | null;
  /** From the banner of plain `nvidia-smi` (the query interface has no field for it). */
  cudaVersion: string | null;
  gpus: { index: number; name: string; memoryTotalBytes: number | null }[];
}

export interface EngineEnvironment {
  /** Detected from the /metrics prefix (vllm:, sglang:, ...) unless --engine says. */
  kind: EngineKind | null;
  version: string | null;
  models: string[];
  versionError: string | null;
  modelsError: string | null;
}

const GPU_FIELDS = ['index', 'name', 'driver_version', 'memory.total'] as const;
const TIMEOUT_MS = 10_000;

export async function gpuEnvironment(nvidiaSmi: string, env?: NodeJS.ProcessEnv): Promise<GpuEnvironment> {
  const none = (error: string): GpuEnvironment => ({ available: false, error, count: 0, models: [], driverVersion: null, cudaVersion: null, gpus: [] });
  const q = await runCommand(nvidiaSmi, [`--query-gpu=${GPU_FIELDS.join(',')}`, '--format=csv,noheader,nounits'], TIMEOUT_MS, { env });
  if (q.error) return none(q.error.code === 'ENOENT' ? `${nvidiaSmi}: not found` : `${nvidiaSmi}: ${q.error.message}`);
  const table = parseQueryCsv(q.stdout, GPU_FIELDS);
  if (q.code !== 0 || table.error || table.rows.length === 0) return none(table.error ?? `${nvidiaSmi} exited ${q.code}: ${q.stderrTail || q.stdout.slice(0, 200)}`);
  const gpus = table.rows.map((r) => ({ index: queryNumber(r[0] ?? null) ?? -1, name: r[1] ?? '', memoryTotalBytes: mib(r[3] ?? null) }));
  const banner = await runCommand(nvidiaSmi, [], TIMEOUT_MS, { env });
  return {
    available: true, error: null, count: gpus.length,
    models: [...new Set(gpus.map((g) => g.name))],
    driverVersion: table.rows[0]![2] ?? /Driver Version:\s*([\w.]+)/.exec(banner.stdout)?.[1] ?? null,
    cudaVersion: parseCudaVersion(banner.stdout),
    gpus,
  };
}

function mib(cell: string | null): number | null {
  const n = queryNumber(cell);
  return n === null ? null : n * MIB;
}

/** "| NVIDIA-SMI 550.54.15   Driver Version: 550.54.15   CUDA Version: 12.4 |" → "12.4". */
export function parseCudaVersion(banner: string): string | null {
  return /CUDA Version:\s*([\d.]+)/.exec(banner)?.[1] ?? null;
}

/** `vllm:` → vllm; data, like the alias table. */
const METRIC_PREFIXES: readonly [RegExp, EngineKind][] = [
  [/^vllm:/m, 'vllm'], [/^sglang:/m, 'sglang'], [/^llamacpp:/m, 'llamacpp'], [/^tgi_/m, 'tgi'],
];

/** infermeter's own /metrics (--infermeter-metrics) names the engine in the `engine` label of its infermeter_engine_* series. */
const INFERMETER_ENGINE = /^infermeter_engine_\w+\{[^}]*\bengine="([a-z]+)"/m;

export function detectEngine(metricsText: string): EngineKind | null {
  const own = INFERMETER_ENGINE.exec(metricsText)?.[1];
  if (own && (ENGINES as readonly string[]).includes(own)) return own as EngineKind;
  return METRIC_PREFIXES.find(([re]) => re.test(metricsText))?.[1] ?? null;
}

export async function engineEnvironment(target: string, metricsUrl: string | null, given: string | null): Promise<EngineEnvironment> {
  const out: EngineEnvironment = { kind: null, version: null, models: [], versionError: null, modelsError: null };
  if (given && (ENGINES as readonly string[]).includes(given)) out.kind = given as EngineKind;
  await getJson(`${target}/version`).then(
    (v) => (out.version = typeof (v as { version?: unknown }).version === 'string' ? (v as { version: string }).version : JSON.stringify(v).slice(0, 200)),
    (err: Error) => (out.versionError = err.message),
  );
  await getJson(`${target}/v1/models`).then(
    (v) => (out.models = (((v as { data?: { id?: unknown }[] }).data ?? []).map((m) => String(m.id)))),
    (err: Error) => (out.modelsError = err.message),
  );
  if (!out.kind && metricsUrl) {
    const text = await getText(metricsUrl).catch(() => '');
    out.kind = detectEngine(text);
  }
  return out;
}

async function getText(url: string): Promise<string> {
  const res = await request(url, { signal: AbortSignal.timeout(TIMEOUT_MS) });
  const text = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`${url}: HTTP ${res.statusCode}`);
  return text;
}

async function getJson(url: string): Promise<unknown> {
  const text = await getText(url);
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`${url}: not JSON`);
  }
}

export function hostEnvironment(): Record<string, unknown> {
  const cpus = os.cpus();
  return {
    cpuModel: cpus[0]?.model ?? null, cpus: cpus.length, memoryBytes: os.totalmem(),
    platform: os.platform(), release: os.release(), arch: os.arch(), node: process.version,
  };
}

export function infermeterVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}
