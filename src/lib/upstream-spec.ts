/**
 * The upstreams one daemon fronts: the config file's `upstreams:` list, or the one
 * `--upstream` (a single `--upstream` is the list of one). Every upstream has its own name
 * (a bounded label value), engine kind, GPUs, engine /metrics URL, TLS files, timeouts and
 * connection pool size; what an entry leaves out comes from the global flags.
 *
 * Plain data (it crosses into the metrics worker by structured clone); pure resolution
 * (nothing here reads a file or the network).
 */
import { ConfigError } from './errors.js';
import { parseDuration, parseHttpUrl, parsePositiveInt, parsePrice } from './parse.js';

export interface UpstreamSpec {
  /** Label value `upstream="<name>"`; default host:port. */
  name: string;
  url: string;
  engine: string;
  /** GPU indexes or UUIDs this engine runs on, as given; empty: attribute automatically (local upstreams). */
  gpus: string[];
  engineMetrics: string;
  connections: number;
  connectTimeout: number;
  headersTimeout: number;
  idleTimeout: number;
  /** TLS files ('' = unset), under the names of the global flags' config keys (tls.ts reads them). */
  upstreamCa: string;
  upstreamCert: string;
  upstreamKey: string;
  upstreamInsecureSkipVerify: boolean;
  /** This upstream's prices (currency per GPU-hour, per kWh), where they differ from --gpu-hour-cost and --energy-price. */
  gpuHourCost?: number;
  energyPrice?: number;
}

/** The global settings an upstream entry falls back to. */
export type UpstreamDefaults = Omit<UpstreamSpec, 'name' | 'url' | 'gpus' | 'gpuHourCost' | 'energyPrice'> & { engines: readonly string[] };

/** Keys an `upstreams:` entry may have, and how each is read. */
const ENTRY_KEYS: Record<string, (v: unknown, d: UpstreamDefaults) => unknown> = {
  name: (v) => labelValue(String(v)),
  url: (v) => parseHttpUrl(String(v)),
  engine: (v, d) => {
    if (!d.engines.includes(String(v))) throw new Error(`expected one of ${d.engines.join(', ')}, got "${String(v)}"`);
    return String(v);
  },
  gpus: (v) => gpuList(v),
  engineMetrics: (v) => parseHttpUrl(String(v)),
  connections: (v) => parsePositiveInt(String(v)),
  connectTimeout: (v) => parseDuration(String(v)),
  headersTimeout: (v) => parseDuration(String(v)),
  idleTimeout: (v) => parseDuration(String(v)),
  upstreamCa: (v) => String(v),
  upstreamCert: (v) => String(v),
  upstreamKey: (v) => String(v),
  upstreamInsecureSkipVerify: (v) => v === true || v === 'true',
  gpuHourCost: (v) => parsePrice(String(v)),
  energyPrice: (v) => parsePrice(String(v)),
};

/** Most upstreams one daemon takes: the record carries the index in one byte, and labels stay bounded. */
export const MAX_UPSTREAMS = 64;

/** The list of one, from `--upstream` (and `--engine-metrics`). */
export function singleUpstream(url: string, d: UpstreamDefaults): UpstreamSpec[] {
  const { engines: _engines, ...rest } = d;
  return [{ ...rest, name: defaultName(url), url, gpus: [], engineMetrics: d.engineMetrics || `${url}/metrics` }];
}

/** Resolves the config file's `upstreams:` value; `where` names it in errors (`--config f.yaml: upstreams`). */
export function resolveUpstreams(raw: unknown, d: UpstreamDefaults, where: string): UpstreamSpec[] {
  if (!Array.isArray(raw) || raw.length === 0) throw new ConfigError(where, 'expected a non-empty list of upstreams, each with at least a url');
  if (raw.length > MAX_UPSTREAMS) throw new ConfigError(where, `at most ${MAX_UPSTREAMS} upstreams, got ${raw.length}`);
  const { engines: _engines, engineMetrics: _m, ...rest } = d;
  const out = raw.map((entry: unknown, i) => {
    const at = `${where}[${i}]`;
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) throw new ConfigError(at, 'expected a mapping with at least url');
    const e = entry as Record<string, unknown>;
    const unknown = Object.keys(e).filter((k) => !(k in ENTRY_KEYS));
    if (unknown.length > 0) throw new ConfigError(at, `unknown key(s): ${unknown.join(', ')} (expected ${Object.keys(ENTRY_KEYS).join(', ')})`);
    if (e['url'] === undefined) throw new ConfigError(`${at}.url`, 'is required: the inference server base URL, e.g. http://127.0.0.1:8001');
    const spec: Record<string, unknown> = { ...rest, gpus: [] };
    for (const [key, value] of Object.entries(e)) {
      try {
        spec[key] = ENTRY_KEYS[key]!(value, d);
      } catch (err) {
        throw new ConfigError(`${at}.${key}`, (err as Error).message, { cause: err });
      }
    }
    const url = spec['url'] as string;
    spec['name'] ??= defaultName(url);
    spec['engineMetrics'] ??= `${url}/metrics`;
    return spec as unknown as UpstreamSpec;
  });
  const seen = new Set<string>();
  out.forEach((u, i) => {
    if (seen.has(u.name)) throw new ConfigError(`${where}[${i}].name`, `"${u.name}" names two upstreams; names must be unique`);
    seen.add(u.name);
  });
  return out;
}

/** host:port of a URL (the default port of its scheme when none is written). */
export function defaultName(url: string): string {
  const u = new URL(url);
  return `${u.hostname}:${u.port || (u.protocol === 'https:' ? '443' : '80')}`;
}

/** The upstream's port when it is on this machine (loopback or one of its own names), else null. */
export function localPort(url: string, localNames: readonly string[] = []): number | null {
  const u = new URL(url);
  const host = u.hostname.replace(/^\[|\]$/g, '');
  const local = host === 'localhost' || host === '::1' || host === '0.0.0.0' || /^127\./.test(host) || localNames.includes(host);
  return local ? Number(u.port || (u.protocol === 'https:' ? 443 : 80)) : null;
}

function labelValue(v: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$/.test(v)) throw new Error(`expected a name of at most 64 letters, digits, _ . : - (it becomes a label value), got "${v}"`);
  return v;
}

function gpuList(v: unknown): string[] {
  const list = Array.isArray(v) ? v : typeof v === 'string' || typeof v === 'number' ? String(v).split(',') : null;
  if (!list) throw new Error('expected a list of GPU indexes or UUIDs, e.g. [0, 1]');
  return list.map((g) => {
    const s = String(g).trim();
    if (!/^\d+$/.test(s) && !/^(GPU|MIG)-[0-9A-Za-z-]+$/.test(s)) throw new Error(`expected a GPU index (0, 1, ...) or UUID (GPU-...), got "${s}"`);
    return s;
  });
}
