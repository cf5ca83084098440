/**
 * npm run bench:proxy — the same streaming load directly against a fake upstream, through
 * infermeter (--workers 1 and --workers 2), through nginx (proxy_buffering off: a plain
 * proxy that measures nothing) and through a bare Node proxy, side by side in one run.
 * Sections (BENCH_SECTIONS, comma-separated; default all): `capacity` (bench/capacity.ts:
 * each chunk its own read at 5 and 2 ms per chunk, CPU per relayed chunk, the knee),
 * `latency` (one chunk per 10 ms at BENCH_CONCURRENCY), `ui` (the same load with the status
 * page open and refreshing every second, BENCH_UI_PAGES of them, vs without), `lockstep`,
 * `throughput` and `memory` (per in-flight stream, per worker and in total). Medians and ratios only: the
 * machine is shared and noisy.
 *
 * BENCH_SECONDS (default 3) sets the length of each cell, BENCH_ROUNDS (default 3) how many
 * interleaved rounds each path's percentiles are pooled over, BENCH_WARMUP_SECONDS (default 2) the
 * warm-up per path at each concurrency, BENCH_CONCURRENCY the stream counts, BENCH_LOCKSTEP
 * the stream count of the lockstep (burst) section (0: skip it). BENCH_TRACING=0 leaves out the
 * capacity path `infermeter --workers 1, tracing` (OTEL_TRACES_EXPORTER=otlp, ratio 1, spans
 * to a sink in this process that answers 200; OTLP metrics stay off): tracing on beside tracing off.
 * BENCH_PREFIX_CACHE=1 adds the capacity path `infermeter --workers 1, prefix cache` (--prefix-cache).
 * BENCH_WORKLOAD_TRACE=1 adds the capacity path `infermeter --workers 1, workload trace`
 * (--workload-trace to a temporary file), and BENCH_PROMPT_BYTES sets the prompts' size
 * (bench/capacity.ts): the workload trace's cost beside the same daemon without it.
 *
 * Clients start spread over one stream's length, as streams are in steady traffic; the
 * lockstep section then starts them all at once, the worst case for per-request cost.
 *
 * For a machine with cores to spare (scripts/device/run.sh): BENCH_WORKERS (default 1,2)
 * lists the `--workers` counts the capacity section measures, one infermeter each;
 * BENCH_UPSTREAM_CPUS and BENCH_PROXY_CPUS pin the upstream and every proxy (infermeter with
 * its workers, nginx, the bare proxy) to those CPUs with taskset (pin the client, this
 * process, by running it under taskset); BENCH_NGINX=0 leaves nginx out (also when it is not
 * on PATH); BENCH_RESULTS names the JSON file (default bench-results/proxy.json).
 * BENCH_CLIENT_THREADS (bench/client-pool.ts) and BENCH_UPSTREAM_PROCS (bench/upstream.ts)
 * spread the capacity section's client and the upstream over that many cores.
 *
 * BENCH_COMPARE=label=dir[,label=dir] adds to the capacity section one `--workers 1` infermeter
 * per entry, run from another checkout's build (`dir/dist/src/cli.js`), in the same interleaved
 * rounds: a change measured against the code before it, with the shared machine's noise on both
 * alike. Name a label in BENCH_CAPACITY_API_PATHS to run it through the API loads too.
 *
 * The `contention` section (bench/contention.ts) runs BENCH_CONTENTION_LOADS (default 64x5,256x2)
 * with the client reading in BENCH_CLIENT mode (`raw`, `sdk` or `both`, the default: side by
 * side in one run): `sdk` decodes each chunk and parses each event as an SDK does, in this one
 * process, on the cores the upstream and proxies use. Rounds: BENCH_ROUNDS, at least 5 here.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent, request } from 'undici';
import { ROOT, closedLoop, cpuSeconds, percentile, processTree, rssBytes, sorted, startNginx, startProcess, streamOnce, type StreamSample } from './lib.js';
import { runCapacity } from './capacity.js';
import { clientPool } from './client-pool.js';
import { runUiSection } from './ui.js';
import { runContention, type ClientMode } from './contention.js';

const SECTIONS = new Set((process.env['BENCH_SECTIONS'] ?? 'capacity,contention,latency,ui,lockstep,throughput,memory').split(',').map((s) => s.trim()));

const SECONDS = Number(process.env['BENCH_SECONDS'] ?? 3);
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 3);
const WARM = Number(process.env['BENCH_WARMUP_SECONDS'] ?? 2);
const CONCURRENCY = (process.env['BENCH_CONCURRENCY'] ?? '1,64,256').split(',').map(Number).filter((n) => n > 0);
const MODELS = 64;
const node = process.execPath;
const WORKERS = [...new Set((process.env['BENCH_WORKERS'] ?? '1,2').split(',').map((s) => s.trim()).filter(Boolean).map(Number))];
if (WORKERS.length === 0 || WORKERS.some((w) => !Number.isInteger(w) || w < 1 || w > 64)) throw new Error(`BENCH_WORKERS: expected a comma-separated list of worker counts (1-64), got "${process.env['BENCH_WORKERS']}"`);
const cpuList = (name: string) => {
  const v = process.env[name]?.trim();
  if (v && !/^\d+(-\d+)?(,\d+(-\d+)?)*$/.test(v)) throw new Error(`${name}: expected a taskset CPU list such as "2-15" or "0,2", got "${v}"`);
  return v || undefined;
};
const UPSTREAM_CPUS = cpuList('BENCH_UPSTREAM_CPUS');
const PROXY_CPUS = cpuList('BENCH_PROXY_CPUS');
const NGINX = process.env['BENCH_NGINX'] !== '0' && spawnSync('sh', ['-c', 'command -v nginx'], { stdio: 'ignore' }).status === 0;
const RESULTS = resolve(ROOT, process.env['BENCH_RESULTS'] ?? 'bench-results/proxy.json');

const upstream = await startProcess(node, [`${ROOT}dist/bench/upstream.js`], /^(\d+)\n/m, { BENCH_MODELS: String(MODELS) }, UPSTREAM_CPUS);
const upstreamPort = Number(upstream.match[1]);
const direct = `http://127.0.0.1:${upstreamPort}`;
const startInfermeter = (workers: number, env: NodeJS.ProcessEnv = {}, root = ROOT, args: string[] = []) =>
  startProcess(
    node,
    [resolve(root, 'dist/src/cli.js'), '--upstream', direct, '--listen', '127.0.0.1:0', '--metrics-listen', '127.0.0.1:0', '--no-collector.gpu', '--no-collector.engine', '--no-collector.host', '--log-level', 'info', '--workers', String(workers), ...args],
    /"proxy":"127\.0\.0\.1:(\d+)","metrics":"127\.0\.0\.1:(\d+)"/,
    env,
    PROXY_CPUS,
  );
/** An OTLP endpoint that reads and accepts every span export (its CPU is this process's, not the path's). */
async function startSpanSink(): Promise<{ url: string; spans: () => number; close: () => void }> {
  let bytes = 0;
  const server = createServer((req, res) => {
    req.on('data', (c: Buffer) => (bytes += c.length));
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans: () => bytes, close: () => server.close() };
}
const TRACING = process.env['BENCH_TRACING'] !== '0' && SECTIONS.has('capacity');
const sink = TRACING ? await startSpanSink() : null;
// The traces endpoint only: OTEL_EXPORTER_OTLP_ENDPOINT would switch OTLP metrics export on too
// (otlp-env.ts), and this path is to differ from the untraced one by tracing alone.
const imTraced = sink
  ? await startInfermeter(1, { OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${sink.url}/v1/traces`, OTEL_METRICS_EXPORTER: 'none', OTEL_TRACES_SAMPLER: 'always_on' })
  : null;
const throughTraced = imTraced ? `http://127.0.0.1:${imTraced.match[1]}` : '';
// BENCH_WORKLOAD_TRACE=1: one more capacity path, the same daemon writing a workload trace
// (docs/workload-trace.md) to a temporary file: its prompt hashing thread's CPU counts for it.
const WORKLOAD_TRACE = process.env['BENCH_WORKLOAD_TRACE'] === '1' && SECTIONS.has('capacity');
const traceDir = WORKLOAD_TRACE ? mkdtempSync(join(tmpdir(), 'bench-workload-trace-')) : '';
const imWorkload = WORKLOAD_TRACE ? await startInfermeter(1, {}, ROOT, ['--workload-trace', join(traceDir, 'trace.jsonl')]) : null;
// BENCH_PREFIX_CACHE=1: one more capacity path, the same daemon modelling the prefix cache live
// (--prefix-cache, docs/prefix-cache.md): its hashing thread and its model on the metrics thread count for it.
const PREFIX_CACHE = process.env['BENCH_PREFIX_CACHE'] === '1' && SECTIONS.has('capacity');
const imPrefix = PREFIX_CACHE ? await startInfermeter(1, {}, ROOT, ['--prefix-cache', 'true']) : null;
// One infermeter per worker count; --workers 1 always (the other sections use it), --workers 2 for memory.
const byWorkers = new Map<number, Awaited<ReturnType<typeof startInfermeter>>>();
for (const w of new Set([1, ...WORKERS, ...(SECTIONS.has('memory') ? [2] : [])])) byWorkers.set(w, await startInfermeter(w));
const COMPARE = (process.env['BENCH_COMPARE'] ?? '').split(',').filter((s) => s.trim() !== '').map((s) => {
  const at = s.indexOf('=');
  if (at <= 0) throw new Error(`BENCH_COMPARE: expected label=dir pairs, got "${s}"`);
  return { name: s.slice(0, at).trim(), root: s.slice(at + 1).trim() };
});
const compared = SECTIONS.has('capacity') ? await Promise.all(COMPARE.map(async (c) => ({ ...c, proc: await startInfermeter(1, {}, c.root) }))) : [];
const urlOf = (p: { match: RegExpExecArray }) => `http://127.0.0.1:${p.match[1]}`;
const im = byWorkers.get(1)!;
const through = urlOf(im);
const metricsUrl = `http://127.0.0.1:${im.match[2]}/metrics`;
const imPid = im.child.pid!;
const nginx = NGINX ? await startNginx(upstreamPort, PROXY_CPUS) : null;
const plain = nginx ? `http://127.0.0.1:${nginx.port}` : '';
const bare = await startProcess(node, [`${ROOT}dist/bench/bare-proxy.js`, direct], /^(\d+)\n/m, {}, PROXY_CPUS);
const nodeFloor = `http://127.0.0.1:${bare.match[1]}`;

/** Every path the load goes through, in the order each round runs them; direct is the baseline. */
const PATHS: [string, string][] = [['direct', direct], ...(nginx ? [['nginx', plain] as [string, string]] : []), ['node http+undici', nodeFloor], ['infermeter', through]];

/** One stream's length at the upstream (20 ms, then 20 chunks 10 ms apart): clients start spread over it. */
const STREAM_MS = 220;
const body = (i: number, spec = { firstMs: 20, chunks: 20, gapMs: 10 }) => JSON.stringify({ model: `bench-model-${i % MODELS}`, stream: true, messages: [{ role: 'user', content: 'bench' }], bench: spec });

interface Cell { ttftP50: number; ttftP99: number; hopP50: number; hopP99: number; oneWayP50: number; oneWayP99: number; requests: number; errors: number }

function summarize(samples: StreamSample[]): Cell {
  const ok = samples.filter((s) => s.ok && s.ttft >= 0);
  const ttft = sorted(ok.map((s) => s.ttft));
  const hop = sorted(ok.filter((s) => s.hop >= 0).map((s) => s.hop));
  const ow = sorted(samples.flatMap((s) => s.oneWay));
  return {
    ttftP50: percentile(ttft, 50),
    ttftP99: percentile(ttft, 99),
    hopP50: percentile(hop, 50),
    hopP99: percentile(hop, 99),
    oneWayP50: percentile(ow, 50),
    oneWayP99: percentile(ow, 99),
    requests: samples.length,
    errors: samples.filter((s) => !s.ok).length,
  };
}

async function scrapeLoop(stop: { done: boolean }): Promise<{ scrapes: number; bytes: number }> {
  let scrapes = 0;
  let bytes = 0;
  while (!stop.done) {
    const res = await request(metricsUrl);
    bytes = (await res.body.text()).length;
    scrapes++;
    await new Promise((r) => setTimeout(r, 1000));
  }
  return { scrapes, bytes };
}

// Warm up every path, and give infermeter's registry ~500 histogram series (64 models × 7 histograms).
await closedLoop(direct, 8, 500, body);
if (nginx) await closedLoop(plain, 8, 500, body);
await closedLoop(nodeFloor, 8, 500, body);
const warmAgent = new Agent({ connections: 16 });
for (const url of [...[...byWorkers.values(), ...compared.map((c) => c.proc)].map(urlOf), ...(imTraced ? [throughTraced] : []), ...(imWorkload ? [urlOf(imWorkload)] : []), ...(imPrefix ? [urlOf(imPrefix)] : [])]) for (let i = 0; i < MODELS * 2; i++) await streamOnce(warmAgent, url, body(i, { firstMs: 1, chunks: 3, gapMs: 1 }), false);
await warmAgent.close();
await new Promise((r) => setTimeout(r, 2000)); // model list fetched; records flushed
const series = (await (await request(metricsUrl)).body.text()).split('\n').filter((l) => l.startsWith('gen_ai_server_time_to_first_token_seconds_bucket')).length;

const rows: Record<string, unknown>[] = [];
function writeResults(done: readonly Record<string, unknown>[], partial: boolean): void {
  mkdirSync(dirname(RESULTS), { recursive: true });
  const settings = { seconds: SECONDS, rounds: ROUNDS, workers: WORKERS, cpus: { upstream: UPSTREAM_CPUS ?? null, proxy: PROXY_CPUS ?? null }, clientThreads: clientPool.threads, upstreamProcs: Number(process.env['BENCH_UPSTREAM_PROCS'] ?? 1), nginx: NGINX };
  writeFileSync(RESULTS, JSON.stringify({ date: new Date().toISOString(), partial, ...settings, rows: done }, null, 2));
}
if (SECTIONS.has('capacity')) {
  const capacityPaths = [
    { name: 'direct', url: direct, pids: [] },
    ...(nginx ? [{ name: 'nginx', url: plain, pids: [nginx.pid] }] : []),
    { name: 'node http+undici', url: nodeFloor, pids: [bare.child.pid!] },
    ...WORKERS.map((w) => ({ name: `infermeter --workers ${w}`, url: urlOf(byWorkers.get(w)!), pids: [byWorkers.get(w)!.child.pid!] })),
    ...compared.map((c) => ({ name: c.name, url: urlOf(c.proc), pids: [c.proc.child.pid!] })),
    ...(imTraced ? [{ name: 'infermeter --workers 1, tracing', url: throughTraced, pids: [imTraced.child.pid!] }] : []),
    ...(imWorkload ? [{ name: 'infermeter --workers 1, workload trace', url: urlOf(imWorkload), pids: [imWorkload.child.pid!] }] : []),
    ...(imPrefix ? [{ name: 'infermeter --workers 1, prefix cache', url: urlOf(imPrefix), pids: [imPrefix.child.pid!] }] : []),
  ];
  // Written after each load and knee step too, marked partial: a run cut short keeps what it measured.
  const partial = (done: readonly Record<string, unknown>[]) => writeResults([...rows, ...done], true);
  rows.push(...(await runCapacity(capacityPaths, { bare: 'node http+undici', ...(nginx ? { nginx: 'nginx' } : {}) }, partial)));
  if (sink) console.log(`tracing path: ${sink.spans()} bytes of OTLP spans received`);
  if (imWorkload) {
    const m = await (await request(`http://127.0.0.1:${imWorkload.match[2]}/metrics`)).body.text();
    const kept = /^infermeter_workload_trace_kept_ratio (\S+)$/m.exec(m)?.[1];
    const written = /^infermeter_workload_trace_requests_total\{result="written"\} (\S+)$/m.exec(m)?.[1];
    const busy = /^infermeter_workload_trace_requests_total\{result="busy"\} (\S+)$/m.exec(m)?.[1];
    console.log(`workload trace path: ${written} lines written, ${busy} skipped busy (kept ratio ${kept}), ${statSync(join(traceDir, 'trace.jsonl')).size} bytes`);
    rows.push({ section: 'workload-trace', written: Number(written), busy: Number(busy), keptRatio: Number(kept) });
  }
  if (imPrefix) {
    const m = await (await request(`http://127.0.0.1:${imPrefix.match[2]}/metrics`)).body.text();
    const count = (result: string) => Number(new RegExp(`^infermeter_prefix_cache_requests_total\\{result="${result}"\\} (\\S+)$`, 'm').exec(m)?.[1] ?? 0);
    const rssMiB = (pid: number) => Math.round(Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN) / 1024);
    const row = { section: 'prefix-cache', modelled: count('modelled'), busy: count('busy'), sampled: count('sampled'), unreadable: count('unreadable'), rssMiB: rssMiB(imPrefix.child.pid!), rssMiBWithout: rssMiB(imPid) };
    console.log(`prefix cache path: ${row.modelled} requests modelled, ${row.busy} shed busy; RSS at the end ${row.rssMiB} MiB (infermeter --workers 1 without it: ${row.rssMiBWithout} MiB)`);
    rows.push(row);
  }
}
if (SECTIONS.has('contention')) {
  const client = process.env['BENCH_CLIENT'] ?? 'both';
  if (!['raw', 'sdk', 'both'].includes(client)) throw new Error(`BENCH_CLIENT: expected raw, sdk or both, got "${client}"`);
  const modes: ClientMode[] = client === 'both' ? ['raw', 'sdk'] : [client as ClientMode];
  const loads = (process.env['BENCH_CONTENTION_LOADS'] ?? '64x5,256x2').split(',').filter(Boolean).map((l) => l.split('x').map(Number) as [number, number]);
  const paths = [
    { name: 'direct', url: direct, pids: [] },
    ...(nginx ? [{ name: 'nginx', url: plain, pids: [nginx.pid] }] : []),
    { name: 'node http+undici', url: nodeFloor, pids: [bare.child.pid!] },
    { name: 'infermeter', url: through, pids: [imPid] },
  ];
  const done = await runContention(paths, { modes, loads, rounds: Math.max(5, ROUNDS), seconds: SECONDS, warmSeconds: WARM, chunks: Number(process.env['BENCH_CAPACITY_CHUNKS'] ?? 40), bare: 'node http+undici' });
  rows.push(...done.map((r) => ({ section: 'contention', ...r })));
  writeResults(rows, true);
}
if (SECTIONS.has('latency')) {
console.log(`\ninfermeter proxy benchmark: ${WARM}s warm-up, then ${SECONDS}s per cell × ${ROUNDS} interleaved rounds, percentiles over all rounds' streams; stream = 20 chunks 10 ms apart after 20 ms`);
console.log(`registry: ${MODELS} models → ${series} TTFT bucket lines (~${Math.round(series / 25)} TTFT series; 7 histograms per model)`);
console.log('paths: direct; nginx (proxy_buffering off, measures nothing); node http+undici (a bare Node proxy, measures nothing: the floor of Node\'s HTTP stack); infermeter');
console.log('hop = TTFT less the upstream\'s own think time: request sent → upstream saw it, plus first token written → client read it (one monotonic clock)');
console.log('added = path − direct; "rounds" = the spread of added TTFT p99 between rounds (noise)');
console.log('\nstreams | path                   | TTFT p50 | TTFT p99 |  hop p50 |  hop p99 | chunk p99 | +TTFT p50 | +TTFT p99 | +hop p50 | +hop p99 | +chunk p99 | rounds +TTFT p99 | requests');
const fmt = (x: number, w: number, d = 2) => x.toFixed(d).padStart(w);
for (const c of CONCURRENCY) {
  // Rounds interleave the paths so that noise from the shared machine hits all of them alike;
  // percentiles pool every round's streams (a p99 of one short cell rests on a handful of
  // samples). A warm-up cell per path first: a daemon runs warm (optimized code, grown heap,
  // open upstream connections), and so does nginx.
  const paths: [string, string, boolean][] = [...PATHS.map(([n, u]): [string, string, boolean] => [n, u, false]), ['infermeter + scrape/1s', through, true]];
  for (const [, base] of PATHS) await closedLoop(base, c, WARM * 1000, body, false, STREAM_MS);
  const perPath = new Map<string, StreamSample[][]>(paths.map(([n]) => [n, []]));
  let scrapes = 0;
  let bytes = 0;
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, base, scrape] of paths) {
      const stop = { done: false };
      const scraping = scrape ? scrapeLoop(stop) : null;
      perPath.get(name)!.push(await closedLoop(base, c, SECONDS * 1000, body, true, STREAM_MS));
      stop.done = true;
      if (scraping) {
        const r = await scraping;
        scrapes += r.scrapes;
        bytes = r.bytes;
      }
    }
  }
  const base = summarize(perPath.get('direct')!.flat());
  const baseRounds = perPath.get('direct')!.map((s) => summarize(s).ttftP99);
  for (const [name] of paths) {
    const r = summarize(perPath.get(name)!.flat());
    const added = { ttftP50: r.ttftP50 - base.ttftP50, ttftP99: r.ttftP99 - base.ttftP99, hopP50: r.hopP50 - base.hopP50, hopP99: r.hopP99 - base.hopP99, chunkP99: r.oneWayP99 - base.oneWayP99 };
    const perRound = perPath.get(name)!.map((s, i) => summarize(s).ttftP99 - baseRounds[i]!);
    rows.push({ streams: c, path: name, ...r, addedTtftP50: added.ttftP50, addedTtftP99: added.ttftP99, addedHopP50: added.hopP50, addedHopP99: added.hopP99, addedChunkP99: added.chunkP99, roundsAddedTtftP99: perRound });
    const d = name === 'direct';
    const spread = d ? '               -' : `${Math.min(...perRound).toFixed(1)} .. ${Math.max(...perRound).toFixed(1)}`.padStart(16);
    console.log(
      `${String(c).padStart(7)} | ${name.padEnd(22)} | ${fmt(r.ttftP50, 8)} | ${fmt(r.ttftP99, 8)} | ${fmt(r.hopP50, 8, 3)} | ${fmt(r.hopP99, 8, 3)} | ${fmt(r.oneWayP99, 9, 3)} | ${d ? '        -' : fmt(added.ttftP50, 9, 3)} | ${d ? '        -' : fmt(added.ttftP99, 9, 3)} | ${d ? '       -' : fmt(added.hopP50, 8, 3)} | ${d ? '       -' : fmt(added.hopP99, 8, 3)} | ${d ? '         -' : fmt(added.chunkP99, 10, 3)} | ${spread} | ${r.requests}${r.errors ? ` (${r.errors} errors)` : ''}`,
    );
  }
  const at = (path: string) => rows.find((x) => x['streams'] === c && x['path'] === path)! as Record<string, number>;
  const ng = nginx ? at('nginx') : { addedTtftP99: NaN, addedHopP99: NaN };
  const nf = at('node http+undici');
  const imr = at('infermeter');
  const ims = at('infermeter + scrape/1s');
  const ratio = (a: number, b: number) => (b > 0 ? `${(a / b).toFixed(2)}×` : 'n/a: ≤ 0');
  console.log(`        added TTFT p99: infermeter ${fmt(imr['addedTtftP99']!, 0, 3)} ms, node http+undici ${fmt(nf['addedTtftP99']!, 0, 3)} ms, nginx ${fmt(ng['addedTtftP99']!, 0, 3)} ms; with scrape ${fmt(ims['addedTtftP99']!, 0, 3)} ms · ${scrapes} scrapes of ${(bytes / 1024).toFixed(0)} KiB`);
  console.log(`        infermeter / nginx: added TTFT p99 ${ratio(imr['addedTtftP99']!, ng['addedTtftP99']!)}, added hop p99 ${ratio(imr['addedHopP99']!, ng['addedHopP99']!)}; infermeter / node http+undici: added TTFT p99 ${ratio(imr['addedTtftP99']!, nf['addedTtftP99']!)}, p50 ${ratio(imr['addedTtftP50']!, nf['addedTtftP50']!)}`);
}

}

if (SECTIONS.has('ui')) {
  rows.push(...(await runUiSection({ direct, through, metricsBase: metricsUrl.replace(/\/metrics$/, ''), concurrency: CONCURRENCY, seconds: SECONDS, rounds: ROUNDS, warmSeconds: WARM, streamMs: STREAM_MS, body, summarize })));
}

// Lockstep: every client starts at the same instant, and with equal stream lengths the
// streams stay in step, so each round of requests reaches the proxy as one burst. This
// is the worst case for per-request cost: the last request of a burst waits for all others.
const LOCKSTEP = Number(process.env['BENCH_LOCKSTEP'] ?? 64);
if (LOCKSTEP > 0 && SECTIONS.has('lockstep')) {
  console.log(`\nlockstep: ${LOCKSTEP} streams all started at once (bursts of ${LOCKSTEP} requests)`);
  for (const [, base] of PATHS) await closedLoop(base, LOCKSTEP, WARM * 1000, body, false);
  const perPath = new Map<string, StreamSample[]>(PATHS.map(([n]) => [n, []]));
  for (let round = 0; round < ROUNDS; round++) for (const [name, base] of PATHS) perPath.get(name)!.push(...(await closedLoop(base, LOCKSTEP, SECONDS * 1000, body)));
  const pooled = new Map(PATHS.map(([n]) => [n, summarize(perPath.get(n)!)]));
  const at = (name: string, k: keyof Cell) => pooled.get(name)![k];
  for (const [name] of PATHS) {
    const add = (k: keyof Cell) => (name === 'direct' ? '-' : (at(name, k) - at('direct', k)).toFixed(3));
    console.log(`  ${name.padEnd(16)} TTFT p50 ${at(name, 'ttftP50').toFixed(2)} p99 ${at(name, 'ttftP99').toFixed(2)} · added TTFT p50 ${add('ttftP50')} p99 ${add('ttftP99')} · added hop p99 ${add('hopP99')}`);
    rows.push({ phase: 'lockstep', streams: LOCKSTEP, path: name, ttftP50: at(name, 'ttftP50'), ttftP99: at(name, 'ttftP99'), hopP50: at(name, 'hopP50'), hopP99: at(name, 'hopP99') });
  }
}

// Throughput: 64 streams of back-to-back chunks, counted at the client.
if (SECTIONS.has('throughput')) {
console.log('\nthroughput (64 streams, 2000 chunks each, no gaps):');
const fast = (i: number) => body(i, { firstMs: 0, chunks: 2000, gapMs: 0 });
const tput: Record<string, number> = {};
for (const [name, base] of PATHS) {
  const cpu0 = cpuSeconds(imPid);
  const t0 = performance.now();
  const samples = await closedLoop(base, 64, SECONDS * 1000, fast, false);
  const secs = (performance.now() - t0) / 1000;
  const chunks = samples.reduce((a, s) => a + s.chunks, 0);
  tput[name] = chunks / secs;
  const extra = name === 'infermeter' ? ` · infermeter CPU ${(((cpuSeconds(imPid) - cpu0) / chunks) * 1000 * 1000).toFixed(1)} ms per 1,000 chunks` : '';
  console.log(`  ${name.padEnd(16)} ${Math.round(chunks / secs).toLocaleString('en')} chunks/s${extra}`);
  rows.push({ phase: 'throughput', path: name, chunksPerSecond: chunks / secs });
}
}

// Memory: 4,000 streams held open (BENCH_HELD_STREAMS; one chunk per second), RSS delta per in-flight stream.
// RSS moves with the heap's growth and collection, so each side is the median of samples:
// ten over the second before, ten while every stream is open. The first hold also grows
// the heap to its working size, which a long-running daemon has done long ago; the second
// hold, on that heap, is the figure. Under --workers each process is measured (the primary
// and every worker), per stream it held, and the machine's total per stream.
if (SECTIONS.has('memory')) {
  const HELD = Number(process.env['BENCH_HELD_STREAMS'] ?? 4000);
  /** The last hold is the figure: by then each process's heap has grown to its working size. */
  const HOLDS = 3;
  const rssMedian = async (pid: number, samples: number, everyMs: number) => {
    const xs: number[] = [];
    for (let i = 0; i < samples; i++) {
      xs.push(rssBytes(pid));
      await new Promise((r) => setTimeout(r, everyMs));
    }
    return percentile(sorted(xs), 50);
  };
  const mib = (b: number) => (b / 2 ** 20).toFixed(1);
  const kib = (b: number) => (b / 1024).toFixed(1);
  const im2 = byWorkers.get(2)!;
  for (const [name, url, root] of [['infermeter --workers 1', through, imPid], ['infermeter --workers 2', urlOf(im2), im2.child.pid!]] as const) {
    const pids = processTree(root);
    const holds: { before: number[]; during: number[]; perStreamTotal: number }[] = [];
    for (let hold = 0; hold < HOLDS; hold++) {
      await new Promise((r) => setTimeout(r, 1000));
      const before = await Promise.all(pids.map((p) => rssMedian(p, 10, 100)));
      const holdAgent = new Agent({ connections: HELD + 10 });
      const held = Array.from({ length: HELD }, (_, i) => streamOnce(holdAgent, url, body(i, { firstMs: 10, chunks: 6, gapMs: 1000 }), false));
      await new Promise((r) => setTimeout(r, 1500));
      const during = await Promise.all(pids.map((p) => rssMedian(p, 10, 250)));
      await Promise.all(held);
      await holdAgent.close();
      const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
      holds.push({ before, during, perStreamTotal: (sum(during) - sum(before)) / HELD });
    }
    console.log(`\nmemory, ${name}: ${HELD} in-flight streams (RSS medians; client and upstream are other processes):`);
    holds.forEach((h, i) => {
      const each = pids.map((p, k) => `${k === 0 ? 'main' : `worker ${k}`} ${mib(h.before[k]!)} → ${mib(h.during[k]!)} MiB`).join(', ');
      // A worker holds about HELD / workers of the streams (round-robin connections).
      const workerShare = pids.length > 1 ? ` · per stream a worker held: ${pids.slice(1).map((_, k) => kib(((h.during[k + 1]! - h.before[k + 1]!) * (pids.length - 1)) / HELD)).join(', ')} KiB` : '';
      console.log(`  ${i === 0 ? 'hold 1 (heap still growing)' : i === HOLDS - 1 ? `hold ${i + 1} (warm heap: the figure)` : `hold ${i + 1}`}: ${each} = ${kib(h.perStreamTotal)} KiB per stream in total${workerShare}`);
    });
    rows.push({ phase: 'memory', path: name, streams: HELD, pids: pids.length, holds, bytesPerStream: holds[HOLDS - 1]!.perStreamTotal });
  }
}

writeResults(rows, false);
console.log(`\nraw figures: ${RESULTS}`);
for (const p of byWorkers.values()) p.child.kill('SIGTERM');
imTraced?.child.kill('SIGTERM');
imWorkload?.child.kill('SIGTERM');
imPrefix?.child.kill('SIGTERM');
if (traceDir) rmSync(traceDir, { recursive: true, force: true });
for (const c of compared) c.proc.child.kill('SIGTERM');
sink?.close();
upstream.child.kill('SIGTERM');
bare.child.kill('SIGTERM');
nginx?.stop();
process.exit(0);
