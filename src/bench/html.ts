/**
 * The report as one self-contained HTML page: headline figures, charts of latency,
 * throughput and GPU/engine state against load (inline SVG, svg.ts), a timeline, and the
 * same tables as the Markdown report.
 */
import type { BenchReport, StepReport } from './report.js';
import { COLORS, lineChart, type Series } from './svg.js';
import { escapeHtml, engineText, gpuText, msText, num, stepLabel } from './format.js';
import { renderMarkdown } from './markdown.js';
import { replayCharts } from './replay/render.js';

const ms = (v: number | null) => (v === null ? null : v * 1000);
const percent = (v: number | null) => (v === null ? null : v * 100);

export function renderHtml(r: BenchReport): string {
  const title = `infermeter bench: ${String(r.config['model'] ?? '')}`;
  const ss = r.singleStream?.summary;
  const cards = ss
    ? [['single-stream TTFT P50', `${msText(ss.ttft.p50)} ms`], ['single-stream TPOT P50', `${msText(ss.tpot.p50, 2)} ms`], ['generation rate P50', `${num(ss.generationRate.p50, 1)} tok/s`]]
    : [];
  const best = [...r.steps].sort((a, b) => b.summary.outputTokensPerSecond - a.summary.outputTokensPerSecond)[0];
  if (best) cards.push(['peak output throughput', `${num(best.summary.outputTokensPerSecond, 0)} tok/s (${stepLabel(best)})`]);
  const withGoodput = r.steps.filter((s) => s.summary.goodput !== null);
  if (withGoodput.length) {
    const g = [...withGoodput].sort((a, b) => b.summary.goodput! - a.summary.goodput!)[0]!;
    cards.push(['peak goodput', `${num(g.summary.goodput)} req/s (${stepLabel(g)})`]);
  }
  const perToken = r.steps.filter((s) => s.energy?.joulesPerOutputToken != null);
  if (perToken.length) {
    const e = [...perToken].sort((a, b) => a.energy!.joulesPerOutputToken! - b.energy!.joulesPerOutputToken!)[0]!;
    cards.push(['lowest energy per output token', `${num(e.energy!.joulesPerOutputToken, 3)} J (${stepLabel(e)})`]);
  }
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px;color:#222;background:#fff;max-width:1200px}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px} .sub{color:#666;margin-bottom:16px}
.partial{background:#fdecea;border:1px solid #d62728;color:#8a1c1c;padding:8px 12px;border-radius:6px;margin:12px 0;font-weight:600}
.cards{display:flex;gap:12px;flex-wrap:wrap;margin:12px 0} .card{border:1px solid #ddd;border-radius:8px;padding:10px 14px;min-width:160px}
.card .k{font-size:12px;color:#666} .card .v{font-size:20px;font-weight:600;margin-top:2px}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(540px,1fr));gap:12px}
.chart{border:1px solid #eee;border-radius:8px;background:#fff}
table{border-collapse:collapse;font-size:12.5px;margin:8px 0} th,td{border:1px solid #ddd;padding:4px 8px;text-align:right} th{background:#f6f6f6}
td:first-child,th:first-child{text-align:left} table:first-of-type td{text-align:left} code{font-size:12px}
</style></head><body>
<h1>${escapeHtml(title)}</h1>
<div class="sub">${escapeHtml(engineText(r))} at ${escapeHtml(String(r.config['target']))} · GPU: ${escapeHtml(gpuText(r))} · ${escapeHtml(String(r.environment['date']))}</div>
${r.partial ? `<div class="partial">PARTIAL REPORT: ${escapeHtml(r.partialReason ?? '')}</div>` : ''}
<div class="cards">${cards.map(([k, v]) => `<div class="card"><div class="k">${escapeHtml(k!)}</div><div class="v">${escapeHtml(v!)}</div></div>`).join('')}</div>
${r.steps.some((s) => s.mode !== 'replay') ? `<h2>Against load</h2><div class="charts">${loadCharts(r.steps.filter((s) => s.mode !== 'replay')).join('\n')}</div>` : ''}
${r.steps.filter((s) => s.mode === 'replay').map((s) => `<h2>Replay</h2><div class="charts">${replayCharts(s).join('\n')}</div>`).join('\n')}
${timeline(r)}
<h2>Tables</h2>
${markdownToHtml(renderMarkdown(r).split('\n').slice(2).join('\n'))}
</body></html>
`;
}

function loadCharts(steps: StepReport[]): string[] {
  const x = steps.map(stepLabel);
  const trio = (f: (s: StepReport) => { p50: number | null; p95: number | null; p99: number | null }): Series[] => [
    { name: 'P50', color: COLORS.p50, values: steps.map((s) => ms(f(s).p50)) },
    { name: 'P95', color: COLORS.p95, values: steps.map((s) => ms(f(s).p95)) },
    { name: 'P99', color: COLORS.p99, values: steps.map((s) => ms(f(s).p99)) },
  ];
  const offered: Series = { name: 'offered', color: COLORS.grey, dashed: true, values: steps.map((s) => (s.mode === 'rate' ? s.load : null)) };
  const energy = steps.some((s) => s.energy)
    ? [lineChart({ title: 'GPU energy per output token', yLabel: 'J/token', x, series: [{ name: 'all tokens', color: COLORS.b, values: steps.map((s) => s.energy?.joulesPerOutputToken ?? null) },
      { name: 'good tokens', color: COLORS.good, values: steps.map((s) => s.energy?.joulesPerGoodOutputToken ?? null) }] })]
    : [];
  return [
    lineChart({ title: 'TTFT vs load', yLabel: 'ms', x, series: trio((s) => s.summary.ttft) }),
    lineChart({ title: 'TPOT vs load', yLabel: 'ms', x, series: trio((s) => s.summary.tpot) }),
    lineChart({ title: 'E2E latency vs load', yLabel: 'ms', x, series: trio((s) => s.summary.e2e) }),
    lineChart({
      title: 'Request throughput and goodput', yLabel: 'req/s', x,
      series: [{ name: 'achieved', color: COLORS.p50, values: steps.map((s) => s.summary.requestsPerSecond) },
        { name: 'goodput', color: COLORS.good, values: steps.map((s) => s.summary.goodput) }, offered],
    }),
    lineChart({ title: 'Output token throughput', yLabel: 'tokens/s', x, series: [{ name: 'output tok/s', color: COLORS.a, values: steps.map((s) => s.summary.outputTokensPerSecond) }] }),
    lineChart({
      title: 'GPU utilisation and KV cache', yLabel: '%', x, yMax: 100,
      series: [{ name: 'GPU mean', color: COLORS.good, values: steps.map((s) => percent(s.resources.gpuUtilization.mean)) },
        { name: 'GPU max', color: COLORS.good, dashed: true, values: steps.map((s) => percent(s.resources.gpuUtilization.max)) },
        { name: 'KV mean', color: COLORS.a, values: steps.map((s) => percent(s.resources.kvCacheUsage.mean)) },
        { name: 'KV max', color: COLORS.a, dashed: true, values: steps.map((s) => percent(s.resources.kvCacheUsage.max)) }],
    }),
    lineChart({ title: 'GPU power', yLabel: 'W', x, series: [{ name: 'mean', color: COLORS.b, values: steps.map((s) => s.resources.gpuPowerWatts.mean) }, { name: 'max', color: COLORS.b, dashed: true, values: steps.map((s) => s.resources.gpuPowerWatts.max) }] }),
    lineChart({ title: 'Engine requests', yLabel: 'requests', x, series: [{ name: 'running mean', color: COLORS.c, values: steps.map((s) => s.resources.requestsRunning.mean) }, { name: 'waiting mean', color: COLORS.p99, values: steps.map((s) => s.resources.requestsWaiting.mean) }] }),
    ...energy,
  ];
}

/** KV cache and GPU utilisation over the whole run, one point per sample. */
function timeline(r: BenchReport): string {
  const e = r.monitor.engine;
  const g = r.monitor.gpu.filter((s) => s.gpu === 0);
  if (e.length === 0 && g.length === 0) return '';
  const marks = [...(r.singleStream ? [{ x: r.singleStream.startedAt, label: 'single' }] : []), ...r.steps.map((s) => ({ x: s.startedAt, label: stepLabel(s) }))];
  const charts = [];
  if (e.length) charts.push(lineChart({ title: 'Engine over time', yLabel: 'KV % / requests', x: e.map((s) => Number(s.t.toFixed(1))), width: 1090, marks, series: [
    { name: 'KV cache %', color: COLORS.a, values: e.map((s) => percent(s.kvCacheUsage)) },
    { name: 'running', color: COLORS.c, values: e.map((s) => s.requestsRunning) },
    { name: 'waiting', color: COLORS.p99, values: e.map((s) => s.requestsWaiting) }] }));
  if (g.length) charts.push(lineChart({ title: 'GPU 0 over time', yLabel: '%', x: g.map((s) => Number(s.t.toFixed(1))), width: 1090, yMax: 100, marks, series: [
    { name: 'utilisation %', color: COLORS.good, values: g.map((s) => percent(s.utilization)) },
    { name: 'memory utilisation %', color: COLORS.b, values: g.map((s) => percent(s.memoryUtilization)) }] }));
  return `<h2>Timeline (seconds since start)</h2><div>${charts.join('\n')}</div>`;
}

/** Just enough Markdown for our own report: headings, pipe tables, quotes, paragraphs. */
export function markdownToHtml(md: string): string {
  const out: string[] = [];
  let table: string[][] | null = null;
  const inline = (s: string) => escapeHtml(s).replace(/`([^`]+)`/g, '<code>$1</code>').replace(/\*\*([^*]+)\*\*/g, '<b>$1</b>');
  const flush = () => {
    if (!table) return;
    const [head, , ...body] = table;
    out.push(`<table><thead><tr>${head!.map((c) => `<th>${inline(c)}</th>`).join('')}</tr></thead><tbody>${body.map((r) => `<tr>${r.map((c) => `<td>${inline(c)}</td>`).join('')}</tr>`).join('')}</tbody></table>`);
    table = null;
  };
  for (const line of md.split('\n')) {
    if (line.startsWith('|')) {
      (table ??= []).push(line.slice(1, -1).split('|').map((c) => c.trim()));
      continue;
    }
    flush();
    if (line.startsWith('## ')) out.push(`<h2>${inline(line.slice(3))}</h2>`);
    else if (line.startsWith('> ')) out.push(`<p class="partial">${inline(line.slice(2))}</p>`);
    else if (line.startsWith('- ')) out.push(`<p>• ${inline(line.slice(2))}</p>`);
    else if (line.trim()) out.push(`<p>${inline(line)}</p>`);
  }
  flush();
  return out.join('\n');
}
