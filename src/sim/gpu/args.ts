/**
 * The fake's command line (the subset of nvidia-smi's that infermeter and people use) and
 * its settings, which come from FAKE_NVIDIA_SMI_* environment variables so that the command
 * line stays exactly what a real nvidia-smi would receive.
 */
import { DEFAULT_GROUPS, GPM_COLUMNS, QUERY_FIELDS, parseCsvFormat, type CsvFormat } from './format.js';
import { COMPUTE_APP_FIELDS, parseComputeApps, type ComputeApp } from './compute-apps.js';

export type Invocation =
  | { kind: 'dmon'; groups: string; prefix: string; delaySeconds: number; count: number | null; ids: number[] | null; gpm: number[] | null; gpmOptions: string | null }
  | { kind: 'dmon-help' }
  | { kind: 'query'; fields: string[]; format: CsvFormat; ids: number[] | null }
  | { kind: 'compute-apps'; fields: string[]; format: CsvFormat; ids: number[] | null }
  | { kind: 'list'; ids: number[] | null }
  | { kind: 'query-xml'; ids: number[] | null }
  | { kind: 'usage' };

/** What nvidia-smi prints (exit 2) when it does not understand its arguments. */
export class UsageError extends Error {
  /** nvidia-smi prints some complaints (an invalid query field) on stdout. */
  constructor(message: string, readonly onStdout = false) {
    super(message);
  }
}

export function parseInvocation(argv: readonly string[]): Invocation {
  const args = [...argv];
  const take = (flag: string): string => {
    const v = args.shift();
    if (v === undefined) throw new UsageError(`Option ${flag} requires an argument.`);
    return v;
  };
  const ids = (v: string) => v.split(',').map((s) => {
    if (!/^\d+$/.test(s.trim())) throw new UsageError(`Invalid GPU id "${s}".`);
    return Number(s);
  });
  if (args[0] === 'dmon') {
    args.shift();
    const inv = {
      kind: 'dmon' as const, groups: DEFAULT_GROUPS, prefix: '', delaySeconds: 1, count: null as number | null, ids: null as number[] | null,
      gpm: null as number[] | null, gpmOptions: null as string | null,
    };
    while (args.length > 0) {
      const a = args.shift()!;
      if (a === '-h' || a === '--help') return { kind: 'dmon-help' };
      if (a === '--gpm-metrics') inv.gpm = gpmIds(take(a));
      else if (a === '--gpm-options') inv.gpmOptions = take(a);
      else if (a === '-s') inv.groups = take(a);
      else if (a === '-o') inv.prefix = take(a);
      else if (a === '-d') inv.delaySeconds = positive(take(a), a);
      else if (a === '-c') inv.count = positive(take(a), a);
      else if (a === '-i') inv.ids = ids(take(a));
      else throw new UsageError(`Invalid combination of input arguments. Please run 'nvidia-smi dmon -h' for help.`);
    }
    if (!/^[pucvmet]+$/.test(inv.groups)) throw new UsageError(`Invalid value "${inv.groups}" for -s.`);
    if (!/^[DT]*$/.test(inv.prefix)) throw new UsageError(`Invalid value "${inv.prefix}" for -o.`);
    if (inv.gpmOptions !== null && !['d', 'm', 'dm', 'md'].includes(inv.gpmOptions)) throw new UsageError(`Invalid value "${inv.gpmOptions}" for --gpm-options.`);
    return inv;
  }
  let fields: string[] | null = null;
  let apps: string[] | null = null;
  let format: CsvFormat | null = null;
  let selected: number[] | null = null;
  let list = false;
  let query = false;
  let xml = false;
  while (args.length > 0) {
    const a = args.shift()!;
    const [flag, inline] = a.startsWith('--') && a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a, undefined];
    const value = () => inline ?? take(flag);
    if (flag === '--query-gpu') fields = value().split(',').map((s) => s.trim()).filter(Boolean);
    else if (flag === '--query-compute-apps') apps = value().split(',').map((s) => s.trim()).filter(Boolean);
    else if (flag === '--format') {
      const spec = value();
      format = parseCsvFormat(spec);
      if (!format) throw new UsageError(`"${spec}" is not a valid format. Use csv[,noheader][,nounits].`);
    } else if (flag === '-i' || flag === '--id') selected = ids(value());
    else if (flag === '-L' || flag === '--list-gpus') list = true;
    else if (flag === '-q' || flag === '--query') query = true;
    else if (flag === '-x' || flag === '--xml-format') xml = true;
    else throw new UsageError(`Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.`);
  }
  if (fields) {
    const bad = fields.find((f) => !(f in QUERY_FIELDS));
    if (bad) throw new UsageError(`Field "${bad}" is not a valid field to query.\n`, true);
    return { kind: 'query', fields, format: format ?? { header: true, units: true }, ids: selected };
  }
  if (apps) {
    const bad = apps.find((f) => !(f in COMPUTE_APP_FIELDS));
    if (bad) throw new UsageError(`Field "${bad}" is not a valid field to query.\n`, true);
    return { kind: 'compute-apps', fields: apps, format: format ?? { header: true, units: true }, ids: selected };
  }
  if (list) return { kind: 'list', ids: selected };
  if (query && xml) return { kind: 'query-xml', ids: selected };
  if (query || xml) throw new UsageError('fake nvidia-smi: -q is answered only as XML (-q -x).');
  return { kind: 'usage' };
}

function gpmIds(v: string): number[] {
  return v.split(',').map((s) => {
    const id = Number(s.trim());
    if (!Number.isInteger(id) || !(id in GPM_COLUMNS)) throw new UsageError(`Invalid GPM metric id "${s}".`);
    return id;
  });
}

function positive(v: string, flag: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) throw new UsageError(`Invalid value "${v}" for ${flag}.`);
  return n;
}

export type Fault = 'none' | 'hang' | 'crash' | 'garbage' | 'header-change';
const FAULTS: readonly Fault[] = ['none', 'hang', 'crash', 'garbage', 'header-change'];

export interface FakeSettings {
  gpus: number;
  model: string | undefined;
  driverVersion: string;
  /** cuda_version in `-q -x` (the CUDA version the driver supports). */
  cudaVersion: string;
  seed: number;
  /** Overrides -d (milliseconds between samples), so tests need not wait whole seconds. */
  periodMs: number | null;
  /** dmon prints its header again every this many sample rounds. */
  headerEvery: number;
  simUrl: string | null;
  /**
   * Several engines on one node: each group of GPUs follows its own simulator
   * (FAKE_NVIDIA_SMI_SIM_URLS="0,1=http://127.0.0.1:8001;2,3=http://127.0.0.1:8002"); the GPUs
   * no group names follow FAKE_NVIDIA_SMI_SIM_URL, or the fixed load.
   */
  simUrls: SimGroup[];
  /** Load to show without a simulator, 0-1. */
  load: number;
  replay: string | null;
  replayLoop: boolean;
  fault: Fault;
  /** Sample lines printed before the fault starts (hang defaults to 0: header only). */
  faultAfter: number;
  /** dmon -s letters switched to by the header-change fault. */
  faultColumns: string;
  /** `dmon -h` lists --gpm-metrics, but dmon exits with an error when given it. */
  gpmReject: boolean;
  /** The GPU is throttled: by its power limit (pviol, lower SM clock) or for temperature (tviol, lower SM clock). */
  throttle: Throttle;
  /** The GPU indexes the throttle holds back (FAKE_NVIDIA_SMI_THROTTLE_GPUS="1,3"); null: every GPU. */
  throttleGpus: number[] | null;
  /** Processes on the GPUs (FAKE_NVIDIA_SMI_COMPUTE_APPS="pid:gpu[:MiB],..."), for --query-compute-apps. */
  computeApps: ComputeApp[];
}

function computeApps(spec: string): ComputeApp[] {
  try {
    return parseComputeApps(spec);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

export interface SimGroup {
  gpus: number[];
  url: string;
}

/** FAKE_NVIDIA_SMI_SIM_URLS: `gpus=url` groups separated by `;`, each GPU in one group at most. */
export function parseSimGroups(spec: string): SimGroup[] {
  const seen = new Set<number>();
  return spec.split(';').map((s) => s.trim()).filter(Boolean).map((part) => {
    const eq = part.indexOf('=');
    const gpus = eq > 0 ? (indexList(part.slice(0, eq), 'FAKE_NVIDIA_SMI_SIM_URLS') ?? []) : [];
    const url = eq > 0 ? part.slice(eq + 1).trim().replace(/\/+$/, '') : '';
    if (gpus.length === 0 || !/^https?:\/\//.test(url)) throw new UsageError(`FAKE_NVIDIA_SMI_SIM_URLS: expected "0,1=http://host:port;2,3=http://host:port", got "${part}"`);
    for (const g of gpus) {
      if (seen.has(g)) throw new UsageError(`FAKE_NVIDIA_SMI_SIM_URLS: GPU ${g} is in two groups`);
      seen.add(g);
    }
    return { gpus, url };
  });
}

export type Throttle = 'none' | 'power' | 'thermal';
const THROTTLES: readonly Throttle[] = ['none', 'power', 'thermal'];

function indexList(spec: string | undefined, name = 'FAKE_NVIDIA_SMI_THROTTLE_GPUS'): number[] | null {
  if (spec === undefined) return null;
  return spec.split(',').map((x) => {
    const n = Number(x.trim());
    if (!Number.isInteger(n) || n < 0) throw new UsageError(`${name}: expected GPU indexes separated by commas, got "${spec}"`);
    return n;
  });
}

export function readSettings(env: NodeJS.ProcessEnv): FakeSettings {
  const get = (k: string) => {
    const v = env[`FAKE_NVIDIA_SMI_${k}`];
    return v === undefined || v.trim() === '' ? undefined : v.trim();
  };
  const num = (k: string, d: number, min = 0) => {
    const v = get(k);
    if (v === undefined) return d;
    const n = Number(v);
    if (!Number.isFinite(n) || n < min) throw new UsageError(`FAKE_NVIDIA_SMI_${k}: expected a number >= ${min}, got "${v}"`);
    return n;
  };
  const throttle = (get('THROTTLE') ?? 'none') as Throttle;
  if (!THROTTLES.includes(throttle)) throw new UsageError(`FAKE_NVIDIA_SMI_THROTTLE: expected one of ${THROTTLES.join(', ')}, got "${throttle}"`);
  const fault = (get('FAULT') ?? 'none') as Fault;
  if (!FAULTS.includes(fault)) throw new UsageError(`FAKE_NVIDIA_SMI_FAULT: expected one of ${FAULTS.join(', ')}, got "${fault}"`);
  return {
    gpus: Math.floor(num('GPUS', 1, 1)),
    model: get('MODEL'),
    driverVersion: get('DRIVER') ?? '550.127.05',
    cudaVersion: get('CUDA') ?? '12.4',
    seed: Math.floor(num('SEED', 1)),
    periodMs: get('PERIOD_MS') === undefined ? null : num('PERIOD_MS', 1000, 1),
    headerEvery: Math.floor(num('HEADER_EVERY', 20, 1)),
    simUrl: get('SIM_URL')?.replace(/\/+$/, '') ?? null,
    simUrls: parseSimGroups(get('SIM_URLS') ?? ''),
    load: Math.min(1, num('LOAD', 0)),
    replay: get('REPLAY') ?? null,
    replayLoop: get('REPLAY_LOOP') !== '0',
    fault,
    faultAfter: Math.floor(num('FAULT_AFTER', fault === 'hang' ? 0 : 3)),
    faultColumns: get('FAULT_COLUMNS') ?? 'pucm',
    gpmReject: get('GPM_REJECT') === '1',
    throttle,
    throttleGpus: indexList(get('THROTTLE_GPUS')),
    computeApps: computeApps(get('COMPUTE_APPS') ?? ''),
  };
}
