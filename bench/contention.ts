/**
 * Contention: the capacity loads read by two kinds of client, side by side in one run, with
 * the ratios of docs/performance.md's "Under contention" targets against the bare Node proxy.
 *
 * - `raw` is bench:proxy's own client: undici, each read's bytes searched for the upstream's
 *   stamp comments (bench/lib.ts), nothing decoded. It costs the shared cores little.
 * - `sdk` reads each chunk as an SDK does (the `openai` client's streaming does the same
 *   steps): each read decoded to a string by a streaming TextDecoder, split into SSE events at
 *   the blank line, each event into lines, `data:` payloads joined and `JSON.parse`d, the
 *   delta's text read. One process, this one, on the same cores as the upstream and the
 *   proxies: a co-located client or sidecar competing for the cores the streams need.
 *
 * Per path and mode: CPU per relayed chunk (utime+stime of the path's processes), TTFT p99
 * added over direct, the client-side inter-chunk gap p99, chunks relayed in the same time,
 * each pooled over interleaved rounds and as a ratio to the bare proxy, with the ratio's
 * spread over rounds (round r's path against round r's bare proxy).
 */
import { Agent, request } from 'undici';
import { readdirSync, readFileSync } from 'node:fs';
import { monoMs, percentile, sorted, treeCpuSeconds } from './lib.js';

/** Per thread of a process, grouped by thread name: CPU seconds and context switches. */
export type ThreadUse = Record<string, { cpu: number; voluntary: number; involuntary: number }>;

/** Reads /proc/<pid>/task/*: utime+stime from stat, context switches from status, by thread name. */
export function threadUse(pid: number): ThreadUse {
  const out: ThreadUse = {};
  let tids: string[] = [];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tids) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const status = readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8');
      // Node leaves its threads' names at "node" (V8's platform workers, libuv's pool, a
      // worker_thread alike), so each is told apart by its thread id; a worker_thread's is the
      // one that keeps its CPU from cell to cell.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // infermeter's metrics thread is the one it renices (src/daemon/metrics-thread-entry.ts).
      const nice = Number(fields[16]);
      const name = tid === String(pid) ? 'main' : `${nice !== 0 ? `nice${nice}` : stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'))}#${tid}`;
      const u = (out[name] ??= { cpu: 0, voluntary: 0, involuntary: 0 });
      u.cpu += (Number(fields[11]) + Number(fields[12])) / 100;
      u.voluntary += Number(/voluntary_ctxt_switches:\s+(\d+)/.exec(status)?.[1] ?? 0);
      u.involuntary += Number(/nonvoluntary_ctxt_switches:\s+(\d+)/.exec(status)?.[1] ?? 0);
    } catch {
      /* the thread ended between listing and reading */
    }
  }
  return out;
}

function useDelta(a: ThreadUse, b: ThreadUse): ThreadUse {
  const out: ThreadUse = {};
  for (const [k, v] of Object.entries(b)) {
    const w = a[k] ?? { cpu: 0, voluntary: 0, involuntary: 0 };
    out[k] = { cpu: v.cpu - w.cpu, voluntary: v.voluntary - w.voluntary, involuntary: v.involuntary - w.involuntary };
  }
  return out;
}

export type ClientMode = 'raw' | 'sdk';

export interface ContentionPath {
  name: string;
  url: string;
  /** Processes whose CPU counts (children and threads included); none for direct. */
  pids: number[];
}

interface Sample { ttft: number; gaps: number[]; chunks: number; ok: boolean }

const TS = /^: ts=/gm;

/** One stream read as bench:proxy always read it: bytes searched, nothing decoded. */
async function rawStream(agent: Agent, url: string, body: string): Promise<Sample> {
  const t0 = monoMs();
  const res = await request(url, { method: 'POST', body, headers: { 'content-type': 'application/json' }, dispatcher: agent });
  let ttft = -1;
  let last = -1;
  let chunks = 0;
  const gaps: number[] = [];
  for await (const c of res.body) {
    const now = monoMs();
    const text = (c as Buffer).toString('latin1');
    TS.lastIndex = 0;
    while (TS.exec(text)) {
      chunks++;
      if (ttft < 0) ttft = now - t0;
      else gaps.push(now - last);
      last = now;
    }
  }
  return { ttft, gaps, chunks, ok: res.statusCode === 200 };
}

/** One stream read as an SDK reads it: decoded, split into events, each event's data parsed. */
async function sdkStream(agent: Agent, url: string, body: string): Promise<Sample> {
  const t0 = monoMs();
  const res = await request(url, { method: 'POST', body, headers: { 'content-type': 'application/json', accept: 'text/event-stream' }, dispatcher: agent });
  const decoder = new TextDecoder();
  let buf = '';
  let ttft = -1;
  let last = -1;
  let chunks = 0;
  let text = '';
  const gaps: number[] = [];
  for await (const c of res.body) {
    buf += decoder.decode(c as Uint8Array, { stream: true });
    let at: number;
    while ((at = buf.indexOf('\n\n')) >= 0) {
      const event = buf.slice(0, at);
      buf = buf.slice(at + 2);
      let data: string | null = null;
      for (const line of event.split('\n')) {
        if (line.startsWith(':')) continue;
        if (line.startsWith('data:')) data = (data === null ? '' : `${data}\n`) + line.slice(line.charCodeAt(5) === 32 ? 6 : 5);
      }
      if (data === null || data === '[DONE]') continue;
      const doc = JSON.parse(data) as { choices?: { delta?: { content?: string } }[]; delta?: string | { text?: string } };
      const piece = doc.choices?.[0]?.delta?.content ?? (typeof doc.delta === 'string' ? doc.delta : doc.delta?.text);
      if (!piece) continue;
      text += piece;
      // The time is taken when the event is in hand, as an SDK's caller sees it.
      const now = monoMs();
      chunks++;
      if (ttft < 0) ttft = now - t0;
      else gaps.push(now - last);
      last = now;
    }
  }
  return { ttft, gaps, chunks: text.length > 0 ? chunks : 0, ok: res.statusCode === 200 };
}

/** Closed loop of `streams` clients for `ms`, starts spread over one stream's length. */
async function loop(mode: ClientMode, url: string, streams: number, ms: number, bodyFor: (i: number) => string, spreadMs: number): Promise<Sample[]> {
  const agent = new Agent({ connections: streams + 8, keepAliveTimeout: 30_000 });
  const read = mode === 'sdk' ? sdkStream : rawStream;
  const out: Sample[] = [];
  const end = performance.now() + ms;
  let i = 0;
  await Promise.all(
    Array.from({ length: streams }, async (_, k) => {
      await new Promise((r) => setTimeout(r, (k * spreadMs) / streams));
      while (performance.now() < end) out.push(await read(agent, url, bodyFor(i++)));
    }),
  );
  await agent.close();
  return out;
}

interface Cell { samples: Sample[]; cpuSeconds: number; seconds: number; threads: ThreadUse }

async function cell(mode: ClientMode, path: ContentionPath, streams: number, gapMs: number, ms: number, chunks: number, api: string): Promise<Cell> {
  const cpu0 = path.pids.reduce((a, p) => a + treeCpuSeconds(p), 0);
  const th0 = path.pids.length ? threadUse(path.pids[0]!) : {};
  const t0 = performance.now();
  const body = (i: number) => JSON.stringify({ model: `bench-model-${i % 64}`, stream: true, messages: [{ role: 'user', content: 'bench' }], bench: { firstMs: gapMs, chunks, gapMs } });
  const samples = await loop(mode, `${path.url}${api}`, streams, ms, body, gapMs * (chunks + 1));
  const threads = path.pids.length ? useDelta(th0, threadUse(path.pids[0]!)) : {};
  return { samples, seconds: (performance.now() - t0) / 1000, cpuSeconds: path.pids.reduce((a, p) => a + treeCpuSeconds(p), 0) - cpu0, threads };
}

export interface Figures { cpuUsPerChunk: number; threads: ThreadUse; ttftP99: number; gapP99: number; chunks: number; chunksPerSecond: number; errors: number }

function figures(cells: Cell[]): Figures {
  const all = cells.flatMap((c) => c.samples);
  const ttft = sorted(all.filter((s) => s.ok && s.ttft >= 0).map((s) => s.ttft));
  const gaps = sorted(all.flatMap((s) => s.gaps));
  const chunks = all.reduce((a, s) => a + s.chunks, 0);
  const cpu = cells.reduce((a, c) => a + c.cpuSeconds, 0);
  const threads: ThreadUse = {};
  for (const c of cells) for (const [k, v] of Object.entries(c.threads)) {
    const t = (threads[k] ??= { cpu: 0, voluntary: 0, involuntary: 0 });
    t.cpu += v.cpu;
    t.voluntary += v.voluntary;
    t.involuntary += v.involuntary;
  }
  return { threads, cpuUsPerChunk: chunks > 0 ? (cpu / chunks) * 1e6 : NaN, ttftP99: percentile(ttft, 99), gapP99: percentile(gaps, 99), chunks, chunksPerSecond: chunks / cells.reduce((a, c) => a + c.seconds, 0), errors: all.filter((s) => !s.ok).length };
}

/** The issue's four ratios of a path to the bare proxy, from figures of the same rounds. */
export interface Ratios { cpu: number; addedTtftP99: number; gapP99: number; chunks: number }
export const TARGETS: { key: keyof Ratios; label: string; ok: (x: number) => boolean; bound: string }[] = [
  { key: 'cpu', label: 'CPU per chunk', ok: (x) => x <= 1.1, bound: '<= 1.10x' },
  { key: 'addedTtftP99', label: 'added TTFT p99', ok: (x) => x <= 1.5, bound: '<= 1.50x' },
  { key: 'gapP99', label: 'chunk-gap p99', ok: (x) => x <= 1.2, bound: '<= 1.20x' },
  { key: 'chunks', label: 'chunks relayed', ok: (x) => x >= 0.97, bound: '>= 0.97x' },
];

function ratios(p: Figures, bare: Figures, direct: Figures): Ratios {
  return { cpu: p.cpuUsPerChunk / bare.cpuUsPerChunk, addedTtftP99: (p.ttftP99 - direct.ttftP99) / (bare.ttftP99 - direct.ttftP99), gapP99: p.gapP99 / bare.gapP99, chunks: p.chunks / bare.chunks };
}

export interface ContentionOptions { modes: ClientMode[]; loads: [number, number][]; rounds: number; seconds: number; warmSeconds: number; chunks: number; bare: string; api?: string }

export interface ContentionRow { mode: ClientMode; streams: number; gapMs: number; path: string; figures: Figures; rounds: Figures[]; vsBare?: Ratios; vsBareRounds?: Ratios[] }

/**
 * Runs every load in every client mode. Within a load the modes and paths interleave in each
 * round (mode by mode, path by path), so the machine's noise falls on all alike.
 */
export async function runContention(paths: ContentionPath[], o: ContentionOptions): Promise<ContentionRow[]> {
  const api = o.api ?? '/v1/chat/completions';
  const rows: ContentionRow[] = [];
  const direct = paths[0]!;
  console.log(`\ncontention: client modes ${o.modes.join(', ')} (raw: bytes searched; sdk: decoded, split, JSON.parse per event; one process on the shared cores); ${o.chunks} chunks per stream; ${o.seconds}s cells × ${o.rounds} interleaved rounds`);
  console.log('mode | load          | path                    | chunks/s | CPU µs/chunk | TTFT p99 | +TTFT p99 | gap p99 | chunks  | × bare: CPU (rounds)        | +TTFT p99 (rounds)          | gap p99 (rounds)            | chunks (rounds)');
  for (const [streams, gapMs] of o.loads) {
    for (const mode of o.modes) for (const p of paths) await cell(mode, p, streams, gapMs, o.warmSeconds * 1000, o.chunks, api);
    const per = new Map<string, Cell[]>();
    const key = (m: ClientMode, p: ContentionPath) => `${m}|${p.name}`;
    for (let r = 0; r < o.rounds; r++) {
      for (const mode of o.modes) {
        for (const p of paths) {
          if (!per.has(key(mode, p))) per.set(key(mode, p), []);
          per.get(key(mode, p))!.push(await cell(mode, p, streams, gapMs, o.seconds * 1000, o.chunks, api));
        }
      }
    }
    for (const mode of o.modes) {
      const d = per.get(key(mode, direct))!;
      const b = per.get(`${mode}|${o.bare}`)!;
      const dF = figures(d);
      const bF = figures(b);
      for (const p of paths) {
        const cells = per.get(key(mode, p))!;
        const f = figures(cells);
        const roundFigures = cells.map((c) => figures([c]));
        const row: ContentionRow = { mode, streams, gapMs, path: p.name, figures: f, rounds: roundFigures };
        if (p !== direct && p.name !== o.bare) {
          row.vsBare = ratios(f, bF, dF);
          row.vsBareRounds = cells.map((c, i) => ratios(figures([c]), figures([b[i]!]), figures([d[i]!])));
        }
        rows.push(row);
        console.log(formatRow(row, f.ttftP99 - dF.ttftP99, p === direct));
        if (p !== direct && f.chunks > 0) console.log(`       threads of ${p.name}: ${threadLine(f)}`);
      }
    }
  }
  return rows;
}

const n = (x: number, w: number, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a').padStart(w);
/** A ratio with its spread over rounds: `1.05× (0.98..1.12)`. */
export function withSpread(row: ContentionRow, k: keyof Ratios): string {
  if (!row.vsBare) return '-';
  const xs = row.vsBareRounds!.map((r) => r[k]).filter(Number.isFinite);
  return `${n(row.vsBare[k], 5, 2)}× (${xs.length ? `${Math.min(...xs).toFixed(2)}..${Math.max(...xs).toFixed(2)}` : 'n/a'})`;
}

/** Per thread name: µs of CPU per relayed chunk, and context switches (voluntary/involuntary) per 1,000 chunks. */
export function threadLine(f: Figures): string {
  return Object.entries(f.threads)
    .filter(([, v]) => v.cpu > 0)
    .sort((a, b) => b[1].cpu - a[1].cpu)
    .slice(0, 5)
    .map(([k, v]) => `${k} ${((v.cpu / f.chunks) * 1e6).toFixed(1)} µs (cs ${((v.voluntary / f.chunks) * 1000).toFixed(0)}/${((v.involuntary / f.chunks) * 1000).toFixed(0)})`)
    .join(', ');
}

function formatRow(row: ContentionRow, added: number, isDirect: boolean): string {
  const f = row.figures;
  const cols = (['cpu', 'addedTtftP99', 'gapP99', 'chunks'] as const).map((k) => withSpread(row, k).padEnd(27));
  return `${row.mode.padEnd(4)} | ${`${row.streams} × ${row.gapMs} ms`.padEnd(13)} | ${row.path.padEnd(23)} | ${n(f.chunksPerSecond, 8, 0)} | ${isDirect ? '           -' : n(f.cpuUsPerChunk, 12)} | ${n(f.ttftP99, 8)} | ${isDirect ? '        -' : n(added, 9)} | ${n(f.gapP99, 7, 2)} | ${String(f.chunks).padStart(7)} | ${cols.join(' | ')}${f.errors ? ` (${f.errors} errors)` : ''}`;
}
