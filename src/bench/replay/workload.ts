/**
 * Trace files → one workload: each request with the moment it is sent (its recorded arrival,
 * divided by --replay-speed), its API, model (after --replay-model) and stream flag. Several
 * files interleave by their recorded start times (a fleet records one trace per node); a
 * file that does not say when it started starts with the earliest that does.
 */
import type { ApiName } from '../../record/routes.js';
import type { TraceFile, TraceRecord } from './trace.js';

/** What a line that does not say is replayed as: Mooncake traces come from chat services. */
export const DEFAULT_API: ApiName = 'chat';
export const DEFAULT_STREAM = true;
/** --replay-model's key that maps every recorded model (and a trace that names none). */
export const ANY_MODEL = '*';

/** The namespace of every file whose ids are infermeter's salted prefix hashes. */
export const SALTED = -1;

export interface ReplayRequest {
  /** Position of its file in the --replay list. */
  file: number;
  record: TraceRecord;
  /** Milliseconds after the replay starts that it is sent. */
  atMs: number;
  api: ApiName;
  /** After --replay-model; null: the bench's --model (or the target's first model). */
  model: string | null;
  stream: boolean;
  blockSize: number;
  /**
   * Hash ids mean the same block only within one namespace: infermeter's salted ids share one
   * (equal ids are equal prefixes, whichever file or node; different salts never meet), a plain
   * Mooncake file has its own (its ids count blocks from 0).
   */
  namespace: number;
}

export interface Workload {
  files: TraceFile[];
  /** In sending order. */
  requests: ReplayRequest[];
  speed: number;
  /** The merged trace's arrival span, as recorded (ms, first to last arrival). */
  recordedSpanMs: number;
  notes: string[];
}

/** `defaultApi`: the API of lines that record none (`--api`, else chat). */
export function buildWorkload(files: readonly TraceFile[], speed: number, models: ReadonlyMap<string, string>, defaultApi: ApiName = DEFAULT_API): Workload {
  const notes: string[] = [];
  const known = files.map((f) => f.meta.startUnixMs).filter((v): v is number => v !== null);
  const first = known.length ? Math.min(...known) : 0;
  if (files.length > 1 && known.length < files.length) {
    const unsaid = files.filter((f) => f.meta.startUnixMs === null).map((f) => f.path);
    notes.push(`no start time in ${unsaid.join(', ')}: taken to start with ${known.length ? 'the earliest file that has one' : 'the others'}`);
  }
  const all: { file: number; record: TraceRecord; abs: number }[] = [];
  for (const [i, f] of files.entries()) {
    const offset = (f.meta.startUnixMs ?? first) - first;
    for (const record of f.records) all.push({ file: i, record, abs: offset + record.timestamp });
  }
  // A recorder writes a line when a request finishes, so lines need not be in arrival order.
  all.sort((a, b) => a.abs - b.abs || a.file - b.file || a.record.line - b.record.line);
  const origin = all[0]?.abs ?? 0;
  const unmapped = new Set<string>();
  const requests = all.map(({ file, record, abs }): ReplayRequest => {
    const recorded = record.model;
    const model = (recorded !== null ? models.get(recorded) : undefined) ?? models.get(ANY_MODEL) ?? recorded;
    if (recorded !== null && model === recorded && models.size > 0) unmapped.add(recorded);
    return {
      file, record, atMs: (abs - origin) / speed, api: record.api ?? defaultApi, model,
      stream: record.stream ?? DEFAULT_STREAM, blockSize: files[file]!.meta.blockSize, namespace: files[file]!.meta.saltedIds ? SALTED : file,
    };
  });
  for (const f of files) {
    if (f.meta.sampling !== null && f.meta.sampling < 1) {
      notes.push(`${f.path} holds ${(f.meta.sampling * 100).toFixed(1)}% of the traffic it saw (sampled): its arrival rate is that share of the real one (--replay-speed ${Number((1 / f.meta.sampling).toFixed(2))} gives the real rate, over a shorter span)`);
    }
  }
    if (unmapped.size) notes.push(`not mapped by --replay-model, sent as recorded: ${[...unmapped].join(', ')}`);
  const recordedSpanMs = all.length ? all[all.length - 1]!.abs - origin : 0;
  return { files: [...files], requests, speed, recordedSpanMs, notes };
}

/** "from=to" pairs of --replay-model (repeatable); `*=to` maps every model. */
export function parseModelMap(pairs: readonly string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const p of pairs) {
    const eq = p.indexOf('=');
    const from = p.slice(0, eq).trim();
    const to = p.slice(eq + 1).trim();
    if (eq < 0 || from === '' || to === '') throw new Error(`expected FROM=TO (a recorded model, then the one to ask the target for; * for every model), got "${p}"`);
    if (out.has(from) && out.get(from) !== to) throw new Error(`${from} is mapped twice (to ${out.get(from)} and to ${to})`);
    out.set(from, to);
  }
  return out;
}

/** The models the workload asks for that the target does not list (when it lists any). */
export function unservedModels(w: Workload, served: readonly string[]): string[] {
  if (served.length === 0) return [];
  return [...new Set(w.requests.map((r) => r.model).filter((m): m is string => m !== null && !served.includes(m)))];
}
