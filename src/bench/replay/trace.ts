/**
 * Reading workload traces: Mooncake's JSON lines ({"timestamp" ms, "input_length",
 * "output_length", "hash_ids"}, as AIPerf's `mooncake_trace` and GuideLLM's replay read
 * them), with infermeter's own fields beside them when the trace was recorded by
 * `--workload-trace` (docs/workload-trace.md). A file recorded elsewhere has none of those:
 * its API defaults to chat and its block size to Mooncake's 512 tokens.
 *
 * The trace's own facts (block size, how blocks were cut, the share kept, start time,
 * version) come from the sidecar beside the trace, `FILE.meta.json`. Pure but for the file
 * reads; every error names the file and line.
 */
import { existsSync, readFileSync } from 'node:fs';
import { ConfigError, UnreadableFileError } from '../../lib/errors.js';
import { APIS, routeByLabel, routeFor, type ApiName } from '../../record/routes.js';

/** Mooncake's block: 512 tokens per hash id (the FAST'25 traces, AIPerf's default). */
export const MOONCAKE_BLOCK_SIZE = 512;

export interface TraceRecord {
  /** 1-based line in its file. */
  line: number;
  /** Milliseconds since the trace began (the request's arrival). */
  timestamp: number;
  inputLength: number;
  outputLength: number;
  /** One per block of the prompt, chained: equal leading ids are equal prefixes. */
  hashIds: number[];
  /** null: not recorded (plain Mooncake). */
  api: ApiName | null;
  model: string | null;
  stream: boolean | null;
  outcome: string | null;
  maxTokens: number | null;
  cachedInputTokens: number | null;
  reasoningTokens: number | null;
  ttftMs: number | null;
  tpotMs: number | null;
  e2eMs: number | null;
  session: string | null;
  /** The upstream that served it (by name); null: not recorded, or none did. */
  upstream: string | null;
}

export interface TraceMeta {
  blockSize: number;
  /** Where the block size came from: the sidecar, or Mooncake's default. */
  from: 'sidecar' | 'default';
  /** How blocks were cut when recorded ("tokens" or "chars", per model when they differ); null when not said. */
  cut: string | null;
  /** Share of the traffic the file holds (the sidecar's kept_ratio, else its sample); null when not said. */
  sampling: number | null;
  /** Wall-clock start of the trace, Unix ms: files interleave by it. null when not said. */
  startUnixMs: number | null;
  /** The infermeter version that wrote it. */
  version: string | null;
  /**
   * Ids are salted 53-bit hashes of prefixes: equal ids are equal prefixes across files (one
   * salt), and different salts never meet. Plain Mooncake ids (0, 1, 2, ...) mean something
   * only within their file.
   */
  saltedIds: boolean;
  /** Each upstream's KV cache as the sidecar's `engines` recorded it, by upstream name (only those with a known size). */
  engines: ReadonlyMap<string, TraceEngine>;
}

/** An upstream's KV cache, from the sidecar: tokens per block and the cache's size in tokens. */
export interface TraceEngine {
  engine: string;
  blockSize: number;
  cacheTokens: number;
}

export interface TraceFile {
  path: string;
  meta: TraceMeta;
  records: TraceRecord[];
}

type Obj = Record<string, unknown>;

/** A line that fails to parse: `FILE:LINE: what` (exit 2, naming --replay). */
class LineError extends Error {}

export function readTraceFile(path: string, flag = '--replay'): TraceFile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new UnreadableFileError(flag, `${path}: cannot read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, { cause: err });
  }
  try {
    return parseTrace(text, path, sidecarOf(path));
  } catch (err) {
    if (err instanceof LineError) throw new ConfigError(flag, err.message, { cause: err });
    throw err;
  }
}

/** A trace's sidecar (docs/workload-trace.md): `FILE.meta.json`, rotated files' too (`FILE.1.meta.json`). */
export function sidecarPath(path: string): string {
  return `${path}.meta.json`;
}

/** The sidecar format this reader knows; a newer one changed what a key means. */
const FORMAT = 'infermeter-workload-trace';
const FORMAT_VERSION = 1;

function sidecarOf(path: string): { path: string; doc: Obj } | null {
  const p = sidecarPath(path);
  if (!existsSync(p)) return null;
  let doc: unknown;
  try {
    doc = JSON.parse(readFileSync(p, 'utf8'));
  } catch (err) {
    throw new LineError(`${p}: not a JSON sidecar (${(err as Error).message})`);
  }
  if (!isObj(doc)) throw new LineError(`${p}: the sidecar must be one JSON object`);
  return { path: p, doc };
}

/** Parses a whole trace; `sidecar` is the parsed sidecar document, when the file has one. */
export function parseTrace(text: string, path: string, sidecar: { path: string; doc: Obj } | null = null): TraceFile {
  const meta = metaOf(sidecar);
  const records: TraceRecord[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i]!.trim();
    if (raw === '') continue;
    const at = `${path}:${i + 1}`;
    let doc: unknown;
    try {
      doc = JSON.parse(raw);
    } catch (err) {
      throw new LineError(`${at}: not JSON (${(err as Error).message})`);
    }
    if (!isObj(doc)) throw new LineError(`${at}: expected one JSON object per line`);
    const r = recordOf(doc, i + 1, at);
    checkBlocks(r, meta.blockSize, at);
    records.push(r);
  }
  if (records.length === 0) throw new LineError(`${path}: no requests in the file (expected Mooncake lines: {"timestamp", "input_length", "output_length", "hash_ids"})`);
  return { path, meta, records };
}

/** The trace's facts from its sidecar; without one, a Mooncake file: 512-token blocks, nothing else known. */
function metaOf(side: { path: string; doc: Obj } | null): TraceMeta {
  if (!side) return { blockSize: MOONCAKE_BLOCK_SIZE, from: 'default', cut: null, sampling: null, startUnixMs: null, version: null, saltedIds: false, engines: new Map() };
  const d = side.doc;
  const at = side.path;
  if (d['format'] !== undefined && d['format'] !== FORMAT) throw new LineError(`${at}: format ${JSON.stringify(d['format'])} is not ${FORMAT}`);
  const version = d['format_version'];
  if (typeof version === 'number' && version > FORMAT_VERSION) throw new LineError(`${at}: format_version ${version} is newer than this infermeter reads (${FORMAT_VERSION}): replay it with the infermeter that wrote it`);
  const start = d['start_unix_ms'] ?? d['start_time'];
  let startUnixMs: number | null = null;
  if (typeof start === 'number' && Number.isFinite(start)) startUnixMs = start;
  else if (typeof start === 'string') {
    startUnixMs = Date.parse(start);
    if (!Number.isFinite(startUnixMs)) throw new LineError(`${at}: start_time "${start}" is not a date`);
  }
  const size = d['block_size'];
  if (size !== undefined && (typeof size !== 'number' || !Number.isInteger(size) || size < 1)) throw new LineError(`${at}: block_size: expected a whole number of tokens ≥ 1, got ${JSON.stringify(size)}`);
  const kept = d['kept_ratio'] ?? d['sample'];
  return {
    blockSize: typeof size === 'number' ? size : MOONCAKE_BLOCK_SIZE,
    from: typeof size === 'number' ? 'sidecar' : 'default',
    cut: cutOf(d['cut']),
    sampling: typeof kept === 'number' && kept > 0 && kept <= 1 ? kept : null,
    startUnixMs,
    version: typeof d['infermeter_version'] === 'string' ? d['infermeter_version'] : null,
    saltedIds: d['hash'] === 'sha256-53-salted',
    engines: enginesOf(d['engines'], at),
  };
}

/** The sidecar's `engines`: those whose block size and cache size are known (an engine that did not report them is left out). */
function enginesOf(v: unknown, at: string): Map<string, TraceEngine> {
  const out = new Map<string, TraceEngine>();
  if (v === undefined) return out;
  if (!isObj(v)) throw new LineError(`${at}: engines: expected an object by upstream name, got ${JSON.stringify(v)}`);
  for (const [name, e] of Object.entries(v)) {
    if (!isObj(e)) throw new LineError(`${at}: engines.${name}: expected an object, got ${JSON.stringify(e)}`);
    const whole = (k: string): number | null => {
      const x = e[k];
      if (x === null || x === undefined) return null;
      if (typeof x !== 'number' || !Number.isInteger(x) || x < 1) throw new LineError(`${at}: engines.${name}.${k}: expected a whole number ≥ 1 or null, got ${JSON.stringify(x)}`);
      return x;
    };
    const blockSize = whole('block_size');
    const cacheTokens = whole('cache_tokens');
    if (blockSize !== null && cacheTokens !== null) out.set(name, { engine: typeof e['engine'] === 'string' ? e['engine'] : 'unknown', blockSize, cacheTokens });
  }
  return out;
}

/** The sidecar's `cut`, per model: "tokens", "chars", or both with their models. */
function cutOf(v: unknown): string | null {
  if (typeof v === 'string') return v;
  if (!isObj(v)) return null;
  const by = new Map<string, string[]>();
  for (const [model, c] of Object.entries(v)) {
    const how = isObj(c) && typeof c['cut'] === 'string' ? c['cut'] : 'unknown';
    by.set(how, [...(by.get(how) ?? []), model === '' ? '(no model)' : model]);
  }
  if (by.size === 0) return null;
  if (by.size === 1) return [...by.keys()][0]!;
  return [...by.entries()].map(([how, models]) => `${how} (${models.join(', ')})`).join('; ');
}

function recordOf(d: Obj, line: number, at: string): TraceRecord {
  if ('text_input' in d || 'text' in d || 'messages' in d || 'payload' in d) {
    throw new LineError(`${at}: prompts given as text (text_input, text, messages, payload) are not replayed: bench --replay builds prompts from input_length and hash_ids`);
  }
  const timestamp = d['timestamp'];
  if (timestamp === undefined) throw new LineError(`${at}: timestamp: missing (milliseconds since the trace began): bench --replay sends each request at its recorded time`);
  if (typeof timestamp !== 'number' || !Number.isFinite(timestamp) || timestamp < 0) throw new LineError(`${at}: timestamp: expected milliseconds ≥ 0, got ${JSON.stringify(timestamp)}`);
  const hashIds = d['hash_ids'] ?? [];
  if (!Array.isArray(hashIds) || !hashIds.every((h) => Number.isSafeInteger(h))) throw new LineError(`${at}: hash_ids: expected a list of whole numbers, got ${JSON.stringify(d['hash_ids']).slice(0, 80)}`);
  return {
    line, timestamp,
    inputLength: count(d, 'input_length', 0, at, true)!,
    outputLength: count(d, 'output_length', 0, at, true)!,
    hashIds: hashIds as number[],
    api: apiOf(d['api'], at),
    // The recorder writes "" for a body that named no model: the bench's own model is sent.
    model: text(d, 'model', at) || null,
    stream: flag(d, 'stream', at),
    outcome: text(d, 'outcome', at),
    maxTokens: count(d, 'max_tokens', 0, at, false),
    cachedInputTokens: count(d, 'cached_input_tokens', 0, at, false),
    reasoningTokens: count(d, 'reasoning_tokens', 0, at, false),
    ttftMs: ms(d, 'ttft_ms', at),
    tpotMs: ms(d, 'tpot_ms', at),
    e2eMs: ms(d, 'e2e_ms', at),
    session: d['session'] === undefined || d['session'] === null ? null : String(d['session']),
    upstream: text(d, 'upstream', at),
  };
}

/**
 * Mooncake's own traces list one id per block, the last one partial (ceil); infermeter's
 * list full blocks only (floor); a trace may list fewer (a cached prefix, the rest unique).
 * More than ceil(input / block) ids cannot be: the block size is wrong.
 */
function checkBlocks(r: TraceRecord, blockSize: number, at: string): void {
  const most = Math.ceil(r.inputLength / blockSize);
  if (r.hashIds.length > most) {
    throw new LineError(`${at}: ${r.hashIds.length} hash_ids for input_length ${r.inputLength} at ${blockSize} tokens per block (at most ${most}): is the block size right?`);
  }
}

/** The API as recorded: our names (chat, completions, messages, responses), a route label or a path. */
function apiOf(v: unknown, at: string): ApiName | null {
  if (v === undefined || v === null) return null;
  if (typeof v === 'string') {
    if ((APIS as readonly string[]).includes(v)) return v as ApiName;
    const api = (v.startsWith('/') ? routeFor(v) : routeByLabel(v)).api;
    if (api) return api;
  }
  throw new LineError(`${at}: api: expected one of ${APIS.join(', ')}, got ${JSON.stringify(v)}`);
}

function count(d: Obj, key: string, min: number, at: string, required: boolean): number | null {
  const v = d[key];
  if (v === undefined || v === null) {
    if (required) throw new LineError(`${at}: ${key}: missing (a whole number of tokens)`);
    return null;
  }
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min) throw new LineError(`${at}: ${key}: expected a whole number ≥ ${min}, got ${JSON.stringify(v)}`);
  return v;
}

function ms(d: Obj, key: string, at: string): number | null {
  const v = d[key];
  if (v === undefined || v === null) return null;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) throw new LineError(`${at}: ${key}: expected milliseconds ≥ 0, got ${JSON.stringify(v)}`);
  return v;
}

function text(d: Obj, key: string, at: string): string | null {
  const v = d[key];
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string') throw new LineError(`${at}: ${key}: expected a string, got ${JSON.stringify(v)}`);
  return v;
}

function flag(d: Obj, key: string, at: string): boolean | null {
  const v = d[key];
  if (v === undefined || v === null) return null;
  if (typeof v !== 'boolean') throw new LineError(`${at}: ${key}: expected true or false, got ${JSON.stringify(v)}`);
  return v;
}

function isObj(v: unknown): v is Obj {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}
