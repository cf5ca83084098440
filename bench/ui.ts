/**
 * bench:proxy's `ui` section: the proxy's added latency with the status page open and
 * refreshing every second, against the same load without it. "Open" means the requests the
 * page makes (src/exporters/ui/assets/app.js): the whole status once, then `?since=` the last
 * point each second, from BENCH_UI_PAGES pages at once (default 1), so the figure does not
 * depend on a browser being installed. Rounds interleave the two paths; percentiles pool every round's streams.
 */
import { request } from 'undici';
import { closedLoop, type StreamSample } from './lib.js';

interface Cell { ttftP50: number; ttftP99: number; hopP99: number; oneWayP99: number; requests: number; errors: number }

export interface UiSectionOptions {
  direct: string;
  through: string;
  metricsBase: string;
  concurrency: number[];
  seconds: number;
  rounds: number;
  warmSeconds: number;
  streamMs: number;
  body: (i: number) => string;
  summarize: (samples: StreamSample[]) => Cell;
}

const PAGES = Number(process.env['BENCH_UI_PAGES'] ?? 1);

/** One open page: polls like the page does until stopped; counts polls and the last body size. */
async function page(base: string, stop: { done: boolean }): Promise<{ polls: number; bytes: number; worstMs: number }> {
  let since = 0;
  let polls = 0;
  let bytes = 0;
  let worstMs = 0;
  while (!stop.done) {
    const t0 = performance.now();
    const res = await request(`${base}/api/v1/status?model=*${since ? `&since=${since}` : ''}`);
    const text = await res.body.text();
    worstMs = Math.max(worstMs, performance.now() - t0);
    const doc = JSON.parse(text) as { series: { start: number; points: number } };
    if (doc.series.points > 0) since = doc.series.start + (doc.series.points - 1) * 1000;
    bytes = text.length;
    polls++;
    await new Promise((r) => setTimeout(r, 1000));
  }
  return { polls, bytes, worstMs };
}

export async function runUiSection(o: UiSectionOptions): Promise<Record<string, unknown>[]> {
  const rows: Record<string, unknown>[] = [];
  const first = await request(`${o.metricsBase}/api/v1/status`);
  const fullBytes = (await first.body.text()).length;
  console.log(`\nstatus page: the proxy's added latency with ${PAGES} page(s) open and refreshing every second vs none (first load ${(fullBytes / 1024).toFixed(0)} KiB)`);
  console.log('streams | path                       | +TTFT p50 | +TTFT p99 | +hop p99 | +chunk p99 | requests | polls · refresh KiB · slowest poll');
  const fmt = (x: number, w: number, d = 3) => x.toFixed(d).padStart(w);
  for (const c of o.concurrency) {
    for (const base of [o.direct, o.through]) await closedLoop(base, c, o.warmSeconds * 1000, o.body, false, o.streamMs);
    const paths = [['direct', false], ['infermeter', false], ['infermeter + page/1s', true]] as const;
    const pooled = new Map<string, StreamSample[]>(paths.map(([n]) => [n, []]));
    const polling = { polls: 0, bytes: 0, worstMs: 0 };
    for (let round = 0; round < o.rounds; round++) {
      for (const [name, open] of paths) {
        const stop = { done: false };
        const pages = open ? Array.from({ length: PAGES }, () => page(o.metricsBase, stop)) : [];
        pooled.get(name)!.push(...(await closedLoop(name === 'direct' ? o.direct : o.through, c, o.seconds * 1000, o.body, true, o.streamMs)));
        stop.done = true;
        for (const p of await Promise.all(pages)) {
          polling.polls += p.polls;
          polling.bytes = p.bytes;
          polling.worstMs = Math.max(polling.worstMs, p.worstMs);
        }
      }
    }
    const base = o.summarize(pooled.get('direct')!);
    const added: Record<string, { ttftP50: number; ttftP99: number; hopP99: number; chunkP99: number }> = {};
    for (const [name] of paths) {
      if (name === 'direct') continue;
      const r = o.summarize(pooled.get(name)!);
      const a = { ttftP50: r.ttftP50 - base.ttftP50, ttftP99: r.ttftP99 - base.ttftP99, hopP99: r.hopP99 - base.hopP99, chunkP99: r.oneWayP99 - base.oneWayP99 };
      added[name] = a;
      const extra = name.includes('page') ? ` | ${polling.polls} · ${(polling.bytes / 1024).toFixed(1)} · ${polling.worstMs.toFixed(1)} ms` : '';
      console.log(`${String(c).padStart(7)} | ${name.padEnd(26)} | ${fmt(a.ttftP50, 9)} | ${fmt(a.ttftP99, 9)} | ${fmt(a.hopP99, 8)} | ${fmt(a.chunkP99, 10)} | ${String(r.requests).padStart(8)}${r.errors ? ` (${r.errors} errors)` : ''}${extra}`);
      rows.push({ phase: 'ui', streams: c, path: name, pages: name.includes('page') ? PAGES : 0, ...r, addedTtftP50: a.ttftP50, addedTtftP99: a.ttftP99, addedHopP99: a.hopP99, addedChunkP99: a.chunkP99 });
    }
    const [off, on] = [added['infermeter']!, added['infermeter + page/1s']!];
    const ratio = (x: number, y: number) => (y > 0 ? `${(x / y).toFixed(2)}×` : 'n/a (≤ 0 without the page)');
    console.log(`        with page / without: added TTFT p50 ${ratio(on.ttftP50, off.ttftP50)}, p99 ${ratio(on.ttftP99, off.ttftP99)}; added hop p99 ${ratio(on.hopP99, off.hopP99)}; added chunk p99 ${ratio(on.chunkP99, off.chunkP99)}`);
  }
  return rows;
}
