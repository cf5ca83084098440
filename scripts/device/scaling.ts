/**
 * The scaling table of a device run, from bench:proxy's capacity rows (bench/capacity.ts):
 * per path, the knee (highest offered chunks/s with added TTFT p50 under 2 ms), the knee as
 * a multiple of `--workers 1`'s, and CPU per relayed chunk at each load (the path's
 * processes and threads; the first process's share beside it for a cluster). Whether the
 * client and upstream kept up is shown by the direct path at the top knee step.
 */

type Row = Record<string, unknown>;

export interface ScalingRow {
  path: string;
  workers: number | null;
  knee: number | null;
  kneeReached: boolean;
  kneeVsOneWorker: number | null;
  /** load label ("256 × 2 ms") → CPU µs per chunk, first process's µs per chunk, chunks/s relayed, added TTFT p50 ms. */
  loads: Record<string, { cpuUsPerChunk: number; rootCpuUsPerChunk: number; chunksPerSecond: number; addedTtftP50: number }>;
}

export interface Scaling {
  loads: string[];
  rows: ScalingRow[];
  /** The direct path at the lowest and the highest knee step: offered vs relayed chunks/s. */
  direct: { streams: number; offered: number; relayed: number }[];
}

const num = (v: unknown) => (typeof v === 'number' ? v : Number.NaN);

export function scalingFrom(rows: Row[]): Scaling {
  const capacity = rows.filter((r) => r['section'] === 'capacity');
  const loads = [...new Set(capacity.map((r) => `${r['streams']} × ${r['gapMs']} ms`))];
  const paths = [...new Set(capacity.map((r) => String(r['path'])))].filter((p) => p !== 'direct');
  const summaries = new Map(rows.filter((r) => r['section'] === 'knee-summary').map((r) => [String(r['path']), r]));
  const workersOf = (p: string) => {
    const m = /^infermeter --workers (\d+)$/.exec(p);
    return m ? Number(m[1]) : null;
  };
  const one = summaries.get('infermeter --workers 1');
  const oneKnee = one ? num(one['kneeChunksPerSecond']) : Number.NaN;
  const out: ScalingRow[] = paths.map((path) => {
    const k = summaries.get(path);
    const knee = k ? num(k['kneeChunksPerSecond']) : Number.NaN;
    const at: ScalingRow['loads'] = {};
    for (const r of capacity.filter((c) => c['path'] === path)) {
      at[`${r['streams']} × ${r['gapMs']} ms`] = { cpuUsPerChunk: num(r['cpuUsPerChunk']), rootCpuUsPerChunk: num(r['rootCpuUsPerChunk']), chunksPerSecond: num(r['chunksPerSecond']), addedTtftP50: num(r['addedTtftP50']) };
    }
    return {
      path, workers: workersOf(path),
      knee: Number.isFinite(knee) ? knee : null,
      kneeReached: k?.['reached'] === true,
      kneeVsOneWorker: Number.isFinite(knee) && knee > 0 && oneKnee > 0 ? knee / oneKnee : null,
      loads: at,
    };
  });
  const directKnee = rows.filter((r) => r['section'] === 'knee' && r['path'] === 'direct');
  const ends = directKnee.length > 1 ? [directKnee[0]!, directKnee.at(-1)!] : directKnee;
  return { loads, rows: out, direct: ends.map((r) => ({ streams: num(r['streams']), offered: num(r['offeredChunksPerSecond']), relayed: num(r['chunksPerSecond']) })) };
}

const f = (x: number, d = 1) => (Number.isFinite(x) ? x.toLocaleString('en', { maximumFractionDigits: d, minimumFractionDigits: d }) : 'n/a');

export function scalingMarkdown(s: Scaling): string {
  const head = ['path', 'knee (offered chunks/s)', '× `--workers 1`', ...s.loads.flatMap((l) => [`CPU µs/chunk at ${l}`, `first process µs/chunk at ${l}`, `chunks/s at ${l}`])];
  const lines = [`| ${head.join(' | ')} |`, `| ${head.map(() => '---').join(' | ')} |`];
  for (const r of s.rows) {
    // A knee of 0 means the first step was already past it.
    const first = s.direct[0]?.offered ?? Number.NaN;
    const knee = r.knee === null ? 'n/a' : r.knee === 0 ? `< ${f(first, 0)} (past it at the first step)` : `${r.kneeReached ? '' : '≥ '}${f(r.knee, 0)}${r.kneeReached ? '' : ' (not reached)'}`;
    const vs = r.kneeVsOneWorker === null ? 'n/a' : `${r.kneeReached ? '' : '≥ '}${r.kneeVsOneWorker.toFixed(2)}×`;
    const cells = s.loads.flatMap((l) => {
      const c = r.loads[l];
      if (!c) return ['n/a', 'n/a', 'n/a'];
      return [f(c.cpuUsPerChunk), r.workers !== null && r.workers > 1 ? f(c.rootCpuUsPerChunk) : '-', f(c.chunksPerSecond, 0)];
    });
    lines.push(`| ${r.path} | ${knee} | ${vs} | ${cells.join(' | ')} |`);
  }
  if (s.direct.length > 0) {
    const each = s.direct.map((d) => `${f(d.relayed, 0)} of ${f(d.offered, 0)} offered chunks/s at ${d.streams} streams (${f((100 * d.relayed) / d.offered, 0)}%)`).join(', ');
    lines.push('', `The direct path (no proxy) relayed ${each}: a share that falls as the load grows means the client or the upstream, not the proxy, set the limit at the top steps.`);
  }
  return lines.join('\n') + '\n';
}
