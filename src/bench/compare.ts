/**
 * `infermeter bench compare A B`: before/after with deltas, absolute and %, the table a
 * tuning report needs. Steps are matched by mode and load; a step only one side ran is
 * shown with the other side empty.
 */
import type { BenchReport, PhaseSummary, StepReport } from './report.js';
import { DASH, stepLabel } from './format.js';

interface Row {
  metric: string;
  a: number | null;
  b: number | null;
  /** false: the two sides are in different units (currencies), so no delta. */
  comparable?: boolean;
  /** Unit shown after numbers; "ms" rows are stored in seconds. */
  unit: 'ms' | 'req/s' | 'tok/s' | '%' | 'J' | 'J/tok' | 'per 1M tok';
}

export function compareRows(a: BenchReport, b: BenchReport): Row[] {
  const rows: Row[] = [];
  const sa = a.singleStream?.summary ?? null;
  const sb = b.singleStream?.summary ?? null;
  if (sa || sb) {
    rows.push(...phaseRows('single-stream', sa, sb, false));
    rows.push({ metric: 'single-stream prefix cache hits', a: a.singleStream?.resources?.prefixCacheHitRatio ?? null, b: b.singleStream?.resources?.prefixCacheHitRatio ?? null, unit: '%' });
  }
  const key = (s: StepReport) => `${s.mode}:${s.load}`;
  const keys = [...new Set([...a.steps, ...b.steps].map(key))];
  for (const k of keys) {
    const x = a.steps.find((s) => key(s) === k) ?? null;
    const y = b.steps.find((s) => key(s) === k) ?? null;
    rows.push(...phaseRows(stepLabel((x ?? y)!), x?.summary ?? null, y?.summary ?? null, true));
    rows.push({ metric: `${stepLabel((x ?? y)!)} GPU util mean`, a: x?.resources.gpuUtilization.mean ?? null, b: y?.resources.gpuUtilization.mean ?? null, unit: '%' });
    rows.push({ metric: `${stepLabel((x ?? y)!)} KV cache mean`, a: x?.resources.kvCacheUsage.mean ?? null, b: y?.resources.kvCacheUsage.mean ?? null, unit: '%' });
    rows.push({ metric: `${stepLabel((x ?? y)!)} prefix cache hits`, a: x?.resources.prefixCacheHitRatio ?? null, b: y?.resources.prefixCacheHitRatio ?? null, unit: '%' });
    rows.push(...energyRows(stepLabel((x ?? y)!), x, y));
  }
  return rows.filter((r) => r.a !== null || r.b !== null);
}

/** A step's energy rows (reports written before energy have none: their side is empty). */
function energyRows(label: string, x: StepReport | null, y: StepReport | null): Row[] {
  const r = (metric: string, f: (e: NonNullable<StepReport['energy']>) => number | null, unit: Row['unit']): Row =>
    ({ metric: `${label} ${metric}`, a: x?.energy ? f(x.energy) : null, b: y?.energy ? f(y.energy) : null, unit });
  const currencies = [...new Set([x?.energy?.currency, y?.energy?.currency].filter((c): c is string => !!c))];
  // Costs in two currencies are not one figure: each is shown, the delta is not.
  const cost = r(`cost / 1M output tokens${currencies.length === 1 ? ` (${currencies[0]})` : ''}`, (e) => e.costPerMillionOutputTokens, 'per 1M tok');
  if (currencies.length > 1) cost.comparable = false;
  return [r('GPU energy', (e) => e.joules, 'J'), r('J / output token', (e) => e.joulesPerOutputToken, 'J/tok'), r('J / good output token', (e) => e.joulesPerGoodOutputToken, 'J/tok'), cost];
}

function phaseRows(label: string, a: PhaseSummary | null, b: PhaseSummary | null, load: boolean): Row[] {
  const r = (metric: string, f: (s: PhaseSummary) => number | null, unit: Row['unit']): Row => ({ metric: `${label} ${metric}`, a: a ? f(a) : null, b: b ? f(b) : null, unit });
  const rows = [
    r('TTFT P50', (s) => s.ttft.p50, 'ms'), r('TTFT P99', (s) => s.ttft.p99, 'ms'),
    r('TPOT P50', (s) => s.tpot.p50, 'ms'), r('TPOT P99', (s) => s.tpot.p99, 'ms'),
    r('E2E P50', (s) => s.e2e.p50, 'ms'), r('E2E P99', (s) => s.e2e.p99, 'ms'),
  ];
  if (!load) rows.push(r('generation rate P50', (s) => s.generationRate.p50, 'tok/s'));
  if (load) {
    rows.push(r('req/s', (s) => s.requestsPerSecond, 'req/s'), r('output tok/s', (s) => s.outputTokensPerSecond, 'tok/s'), r('goodput', (s) => s.goodput, 'req/s'));
    rows.push(r('errors', (s) => (s.requests === 0 ? null : (s.requests - s.ok) / s.requests), '%'));
  }
  return rows;
}

function show(v: number | null, unit: Row['unit']): string {
  if (v === null) return DASH;
  if (unit === 'ms') return `${(v * 1000).toFixed(2)} ms`;
  if (unit === '%') return `${(v * 100).toFixed(1)}%`;
  if (unit === 'J') return `${v.toFixed(0)} J`;
  if (unit === 'J/tok') return `${v.toFixed(3)} J/tok`;
  if (unit === 'per 1M tok') return v.toFixed(3);
  return `${v.toFixed(2)} ${unit}`;
}

function delta(r: Row): [string, string] {
  if (r.a === null || r.b === null || r.comparable === false) return [DASH, DASH];
  const d = r.b - r.a;
  const digits = r.unit === 'J/tok' || r.unit === 'per 1M tok' ? 3 : 2;
  const abs = r.unit === 'ms' ? `${d >= 0 ? '+' : ''}${(d * 1000).toFixed(2)} ms` : r.unit === '%' ? `${d >= 0 ? '+' : ''}${(d * 100).toFixed(1)} pt` : `${d >= 0 ? '+' : ''}${d.toFixed(digits)}`;
  const rel = r.a === 0 ? DASH : `${d >= 0 ? '+' : ''}${((d / Math.abs(r.a)) * 100).toFixed(1)}%`;
  return [abs, rel];
}

/** A Markdown table (it reads as plain text in a terminal too). */
export function renderCompare(a: BenchReport, b: BenchReport, names: [string, string]): string {
  const lines = [
    `| metric | A: ${names[0]} | B: ${names[1]} | Δ (B − A) | Δ % |`,
    '| --- | ---: | ---: | ---: | ---: |',
  ];
  for (const r of compareRows(a, b)) {
    const [abs, rel] = delta(r);
    lines.push(`| ${r.metric} | ${show(r.a, r.unit)} | ${show(r.b, r.unit)} | ${abs} | ${rel} |`);
  }
  const notes: string[] = [];
  if (a.partial || b.partial) notes.push(`note: ${[a.partial ? 'A' : '', b.partial ? 'B' : ''].filter(Boolean).join(' and ')} partial`);
  for (const k of ['inputTokens', 'outputTokens', 'model', 'route', 'arrivals', 'durationSeconds'] as const) {
    if (JSON.stringify(a.config[k]) !== JSON.stringify(b.config[k])) notes.push(`note: ${k} differs (A ${JSON.stringify(a.config[k])}, B ${JSON.stringify(b.config[k])})`);
  }
  return [...lines, ...(notes.length ? ['', ...notes] : [])].join('\n') + '\n';
}
