/**
 * The capacity section of bench:proxy: each chunk in its own read, at the chunk rates of
 * a busy inference node, up to and past the knee, for every path side by side.
 *
 * - Loads: 64 and 256 streams at one chunk per 5 ms and per 2 ms (40 chunks after 5 ms).
 *   Per path: CPU per relayed chunk (utime+stime of all of that path's processes and
 *   threads, from /proc), chunks/s relayed, added TTFT p50/p99 and added inter-chunk p99
 *   (path − direct at the same load, pooled over interleaved rounds, with the spread).
 * - By API (BENCH_CAPACITY_API_LOADS, default 64x5,256x2; BENCH_CAPACITY_API_PATHS, default
 *   `infermeter --workers 1`): the same streams as chat, Anthropic Messages and OpenAI
 *   Responses events, CPU per relayed chunk and its ratio to chat's on the same path.
 * - The knee: the offered rate is stepped (streams × 200 chunks/s at 5 ms); a path's knee
 *   is the highest offered chunks/s at which its added TTFT p50 stays under 2 ms.
 * - The client runs on BENCH_CLIENT_THREADS threads (bench/client-pool.ts; default 1).
 * - BENCH_CAPACITY_CHUNKS (default 40) sets the chunks per stream; the JSON rows carry CPU per
 *   request beside CPU per chunk.
 */
import { cpuSeconds, percentile, sorted, treeCpuSeconds, type StreamSample } from './lib.js';
import { clientPool } from './client-pool.js';

export interface CapacityPath {
  name: string;
  url: string;
  /** Processes whose CPU counts for this path (their children and threads included); none for direct. */
  pids: number[];
}

const SECONDS = Number(process.env['BENCH_SECONDS'] ?? 3);
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 3);
/** A daemon runs warm (optimized code, grown heap, open connections): every path gets the same warm-up per load. */
const WARM_MS = Number(process.env['BENCH_WARMUP_SECONDS'] ?? 3) * 1000;
/** Chunks per stream (BENCH_CAPACITY_CHUNKS): few chunks make the cost per request the larger share. */
const CHUNKS = Number(process.env['BENCH_CAPACITY_CHUNKS'] ?? 40);
const KNEE_P50_MS = 2;
const loads = (v: string) => v.split(',').filter((l) => l !== '').map((l) => l.split('x').map(Number) as [number, number]);
const LOADS = loads(process.env['BENCH_CAPACITY_LOADS'] ?? '64x5,64x2,256x5,256x2');
const KNEE_STEPS = (process.env['BENCH_KNEE_STREAMS'] ?? '64,128,160,192,224,256,288,320,384').split(',').filter((n) => n !== '').map(Number);
/** The generation APIs as loads: the same chunks in each API's events, CPU per chunk against chat's. */
const API_LOADS = loads(process.env['BENCH_CAPACITY_API_LOADS'] ?? '64x5,256x2');
const APIS: Record<string, string> = { chat: '/v1/chat/completions', messages: '/v1/messages', responses: '/v1/responses' };
/** Which paths the API loads run through (by name; direct is always the baseline). */
const API_PATHS = (process.env['BENCH_CAPACITY_API_PATHS'] ?? 'infermeter --workers 1').split(',').map((s) => s.trim());

interface Cell {
  samples: StreamSample[];
  cpuSeconds: number;
  /** The first process alone (a cluster's primary: accept, IPC relay, the metrics thread). */
  rootCpuSeconds: number;
  seconds: number;
}

const bodyFor = (gapMs: number) => (i: number) =>
  JSON.stringify({ model: `bench-model-${i % 64}`, stream: true, messages: [{ role: 'user', content: 'bench' }], bench: { firstMs: gapMs, chunks: CHUNKS, gapMs } });

async function cell(path: CapacityPath, streams: number, gapMs: number, ms: number, api = APIS['chat']!): Promise<Cell> {
  const cpu0 = path.pids.reduce((a, p) => a + treeCpuSeconds(p), 0);
  const root0 = path.pids.length ? cpuSeconds(path.pids[0]!) : 0;
  const t0 = performance.now();
  const samples = await clientPool.closedLoop(path.url, streams, ms, bodyFor(gapMs), true, gapMs * (CHUNKS + 1), api);
  const seconds = (performance.now() - t0) / 1000;
  const rootCpuSeconds = path.pids.length ? cpuSeconds(path.pids[0]!) - root0 : 0;
  return { samples, seconds, rootCpuSeconds, cpuSeconds: path.pids.reduce((a, p) => a + treeCpuSeconds(p), 0) - cpu0 };
}

interface Summary { ttftP50: number; ttftP99: number; chunkP99: number; chunks: number; requests: number; chunksPerSecond: number; cpuUsPerChunk: number; cpuUsPerRequest: number; rootCpuUsPerChunk: number; errors: number }

function summarize(cells: Cell[]): Summary {
  const all = cells.flatMap((c) => c.samples);
  const ttft = sorted(all.filter((s) => s.ok && s.ttft >= 0).map((s) => s.ttft));
  const oneWay = sorted(all.flatMap((s) => s.oneWay));
  const chunks = all.reduce((a, s) => a + s.chunks, 0);
  const seconds = cells.reduce((a, c) => a + c.seconds, 0);
  const cpu = cells.reduce((a, c) => a + c.cpuSeconds, 0);
  const root = cells.reduce((a, c) => a + c.rootCpuSeconds, 0);
  return { rootCpuUsPerChunk: chunks > 0 ? (root / chunks) * 1e6 : NaN, ttftP50: percentile(ttft, 50), ttftP99: percentile(ttft, 99), chunkP99: percentile(oneWay, 99), chunks, requests: all.length, chunksPerSecond: chunks / seconds, cpuUsPerChunk: chunks > 0 ? (cpu / chunks) * 1e6 : NaN, cpuUsPerRequest: all.length > 0 ? (cpu / all.length) * 1e6 : NaN, errors: all.filter((s) => !s.ok).length };
}

const f = (x: number, w: number, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a').padStart(w);
const ratio = (a: number, b: number) => (b > 0 && Number.isFinite(a) ? `${(a / b).toFixed(2)}×` : 'n/a');

/** Runs the loads and the knee search; prints tables and returns rows for the JSON report. */
export async function runCapacity(paths: CapacityPath[], reference: { bare: string; nginx?: string }, progress: (rows: readonly Record<string, unknown>[]) => void = () => {}): Promise<Record<string, unknown>[]> {
  const rows: Record<string, unknown>[] = [];
  const direct = paths[0]!;
  console.log(`\ncapacity: each chunk its own read (${CHUNKS} chunks per stream); ${SECONDS}s cells × ${ROUNDS} interleaved rounds; client on ${clientPool.threads} thread(s); CPU = utime+stime of the path's processes per relayed chunk`);
  console.log('load          | path                    | chunks/s | CPU µs/chunk | +TTFT p50 | +TTFT p99 | +chunk p99 | rounds +TTFT p50 | × bare CPU | × nginx CPU | × bare +p50');
  for (const [streams, gapMs] of LOADS) {
    const primaries: string[] = [];
    for (const p of paths) await cell(p, streams, gapMs, WARM_MS);
    const per = new Map<string, Cell[]>(paths.map((p) => [p.name, []]));
    for (let r = 0; r < ROUNDS; r++) for (const p of paths) per.get(p.name)!.push(await cell(p, streams, gapMs, SECONDS * 1000));
    const base = summarize(per.get(direct.name)!);
    const baseRounds = per.get(direct.name)!.map((c) => summarize([c]).ttftP50);
    const sums = new Map(paths.map((p) => [p.name, summarize(per.get(p.name)!)]));
    const added = (name: string) => sums.get(name)!.ttftP50 - base.ttftP50;
    for (const p of paths) {
      const s = sums.get(p.name)!;
      const d = p === direct;
      const rounds = per.get(p.name)!.map((c, i) => summarize([c]).ttftP50 - baseRounds[i]!);
      const row = { section: 'capacity', streams, gapMs, offeredChunksPerSecond: (streams * 1000) / gapMs, path: p.name, ...s, addedTtftP50: s.ttftP50 - base.ttftP50, addedTtftP99: s.ttftP99 - base.ttftP99, addedChunkP99: s.chunkP99 - base.chunkP99, roundsAddedTtftP50: rounds, roundsCpuUsPerChunk: per.get(p.name)!.map((c) => summarize([c]).cpuUsPerChunk) };
      rows.push(row);
      const load = `${streams} × ${gapMs} ms`.padEnd(13);
      const cpu = d ? '           -' : f(s.cpuUsPerChunk, 12, 1);
      const spread = d ? '-'.padStart(16) : `${Math.min(...rounds).toFixed(2)} .. ${Math.max(...rounds).toFixed(2)}`.padStart(16);
      const nginxCpu = reference.nginx ? sums.get(reference.nginx)!.cpuUsPerChunk : NaN;
      const vs = d || p.name === reference.bare ? ['         -', '          -', '          -'] : [ratio(s.cpuUsPerChunk, sums.get(reference.bare)!.cpuUsPerChunk).padStart(10), ratio(s.cpuUsPerChunk, nginxCpu).padStart(11), ratio(added(p.name), added(reference.bare)).padStart(11)];
      if (p.pids.length && s.rootCpuUsPerChunk !== s.cpuUsPerChunk) primaries.push(`${p.name}: ${s.rootCpuUsPerChunk.toFixed(1)} of ${s.cpuUsPerChunk.toFixed(1)} µs`);
      console.log(`${load} | ${p.name.padEnd(23)} | ${f(s.chunksPerSecond, 8, 0)} | ${cpu} | ${d ? '        -' : f(row.addedTtftP50, 9)} | ${d ? '        -' : f(row.addedTtftP99, 9)} | ${d ? '         -' : f(row.addedChunkP99, 10)} | ${spread} | ${vs.join(' | ')}${s.errors ? ` (${s.errors} errors)` : ''}`);
    }
    // nginx's master and a cluster's primary: how much of the path's CPU per chunk is the first process.
    if (primaries.length) console.log(`${''.padEnd(13)} | first process's share per chunk (a cluster's primary: accept, IPC relay, metrics thread): ${primaries.join('; ')}`);
    progress(rows);
  }

  rows.push(...(await runApiLoads(paths)));

  // The knee: step the offered rate; the direct path at each step is the baseline.
  console.log(`\nknee: offered chunks/s stepped (streams × 200/s at one chunk per 5 ms); knee = highest offered rate with added TTFT p50 < ${KNEE_P50_MS} ms`);
  const knee = new Map<string, number>(paths.slice(1).map((p) => [p.name, 0]));
  const past = new Set<string>();
  console.log(`streams | offered/s | ${paths.map((p) => p.name.padStart(18)).join(' | ')}   (added TTFT p50 ms · chunks/s relayed)`);
  for (const streams of KNEE_STEPS) {
    const active = paths.filter((p, i) => i === 0 || !past.has(p.name));
    if (active.length === 1) break;
    for (const p of active) await cell(p, streams, 5, WARM_MS);
    const per = new Map<string, Cell[]>(active.map((p) => [p.name, []]));
    for (let r = 0; r < Math.max(1, ROUNDS - 1); r++) for (const p of active) per.get(p.name)!.push(await cell(p, streams, 5, SECONDS * 1000));
    const base = summarize(per.get(direct.name)!);
    const offered = streams * 200;
    const cells = paths.map((p) => {
      if (!per.has(p.name)) return '(past the knee)'.padStart(18);
      const s = summarize(per.get(p.name)!);
      const add = s.ttftP50 - base.ttftP50;
      rows.push({ section: 'knee', streams, offeredChunksPerSecond: offered, path: p.name, ...s, addedTtftP50: add });
      if (p === direct) return `${f(s.chunksPerSecond, 7, 0)}/s`.padStart(18);
      // One step past the knee is measured too, then the path is left out.
      if (add < KNEE_P50_MS && !past.has(p.name)) knee.set(p.name, offered);
      else past.add(p.name);
      return `${f(add, 6)} · ${f(s.chunksPerSecond, 6, 0)}/s`.padStart(18);
    });
    console.log(`${String(streams).padStart(7)} | ${String(offered).padStart(9)} | ${cells.join(' | ')}`);
    progress(rows);
  }
  const bareKnee = knee.get(reference.bare) ?? 0;
  const nginxKnee = reference.nginx ? knee.get(reference.nginx) ?? 0 : 0;
  for (const [name, k] of knee) {
    console.log(`  knee ${name.padEnd(23)} ${String(k).padStart(7)} chunks/s offered · × bare ${ratio(k, bareKnee)} · × nginx ${ratio(k, nginxKnee)}${past.has(name) ? '' : ' (not reached: the knee is above the last step)'}`);
    rows.push({ section: 'knee-summary', path: name, kneeChunksPerSecond: k, reached: past.has(name) });
  }
  return rows;
}

/**
 * The APIs as loads: at each load, chat, messages and responses streams of the same chunks
 * (each chunk its own read) through the chosen paths, rounds interleaved over the APIs so the
 * machine's noise falls on all alike. Reports CPU per relayed chunk and its ratio to chat's on
 * the same path: the typed-event scan should cost what the chat scan costs.
 */
export async function runApiLoads(paths: CapacityPath[]): Promise<Record<string, unknown>[]> {
  const rows: Record<string, unknown>[] = [];
  const direct = paths[0]!;
  const measured = [direct, ...paths.filter((p) => API_PATHS.includes(p.name))];
  if (API_LOADS.length === 0 || measured.length < 2) return rows;
  console.log(`\ncapacity by API: the same ${CHUNKS}-chunk streams as chat, messages and responses events; ${SECONDS}s cells × ${ROUNDS} rounds interleaved over the APIs`);
  console.log('load          | API       | path                    | chunks/s | CPU µs/chunk | × chat CPU | +TTFT p50 | +chunk p99 | rounds CPU µs/chunk');
  for (const [streams, gapMs] of API_LOADS) {
    for (const p of measured) for (const api of Object.values(APIS)) await cell(p, streams, gapMs, WARM_MS, api);
    const per = new Map<string, Cell[]>();
    const key = (p: CapacityPath, api: string) => `${p.name}|${api}`;
    for (let r = 0; r < ROUNDS; r++) {
      for (const p of measured) {
        for (const [api, route] of Object.entries(APIS)) {
          const k = key(p, api);
          if (!per.has(k)) per.set(k, []);
          per.get(k)!.push(await cell(p, streams, gapMs, SECONDS * 1000, route));
        }
      }
    }
    for (const api of Object.keys(APIS)) {
      const base = summarize(per.get(key(direct, api))!);
      for (const p of measured.slice(1)) {
        const s = summarize(per.get(key(p, api))!);
        const chat = summarize(per.get(key(p, 'chat'))!);
        const rounds = per.get(key(p, api))!.map((c) => summarize([c]).cpuUsPerChunk);
        const vsChat = s.cpuUsPerChunk / chat.cpuUsPerChunk;
        rows.push({ section: 'capacity-api', api, streams, gapMs, path: p.name, ...s, cpuVsChat: vsChat, addedTtftP50: s.ttftP50 - base.ttftP50, addedChunkP99: s.chunkP99 - base.chunkP99, roundsCpuUsPerChunk: rounds });
        console.log(`${`${streams} × ${gapMs} ms`.padEnd(13)} | ${api.padEnd(9)} | ${p.name.padEnd(23)} | ${f(s.chunksPerSecond, 8, 0)} | ${f(s.cpuUsPerChunk, 12, 1)} | ${ratio(s.cpuUsPerChunk, chat.cpuUsPerChunk).padStart(10)} | ${f(s.ttftP50 - base.ttftP50, 9)} | ${f(s.chunkP99 - base.chunkP99, 10)} | ${rounds.map((x) => x.toFixed(1)).join(', ')}${s.errors ? ` (${s.errors} errors)` : ''}`);
      }
    }
  }
  return rows;
}
