/**
 * Line charts as inline SVG, generated here: no library, no CDN, nothing fetched, so the
 * HTML report is one self-contained file that opens anywhere, offline.
 */
import { escapeHtml } from './format.js';

export interface Series {
  name: string;
  color: string;
  values: (number | null)[];
  dashed?: boolean;
}

export interface ChartSpec {
  title: string;
  yLabel: string;
  /** Category labels (load steps) or numbers (a timeline). */
  x: (string | number)[];
  series: Series[];
  width?: number;
  height?: number;
  /** Fixed top of the y axis (100 for percentages). */
  yMax?: number;
  /** Vertical marks on a numeric x axis (phase starts on a timeline). */
  marks?: { x: number; label: string }[];
}

export const COLORS = { p50: '#1f77b4', p95: '#ff7f0e', p99: '#d62728', good: '#2ca02c', a: '#9467bd', b: '#8c564b', c: '#17becf', grey: '#7f7f7f' };

const PAD = { left: 56, right: 16, top: 34, bottom: 48 };

export function lineChart(spec: ChartSpec): string {
  const w = spec.width ?? 540;
  const h = spec.height ?? 300;
  const pw = w - PAD.left - PAD.right;
  const ph = h - PAD.top - PAD.bottom;
  const head = `<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}" role="img" aria-label="${escapeHtml(spec.title)}">` +
    `<text x="${PAD.left}" y="18" font-size="14" font-weight="600" fill="#222">${escapeHtml(spec.title)}</text>`;
  const values = spec.series.flatMap((s) => s.values).filter((v): v is number => v !== null && Number.isFinite(v));
  if (values.length === 0 || spec.x.length === 0) {
    return `${head}<text x="${w / 2}" y="${h / 2}" text-anchor="middle" font-size="13" fill="#888">no data</text></svg>`;
  }
  const numeric = spec.x.every((v) => typeof v === 'number');
  const xs = spec.x.map((v, i) => (numeric ? (v as number) : i));
  const [x0, x1] = numeric ? [Math.min(...xs), Math.max(...xs)] : [-0.5, spec.x.length - 0.5];
  const yMax = spec.yMax !== undefined && Math.max(...values) <= spec.yMax ? spec.yMax : niceCeil(Math.max(...values) * 1.05);
  const yMin = Math.min(0, ...values);
  const px = (x: number) => PAD.left + (x1 === x0 ? pw / 2 : ((x - x0) / (x1 - x0)) * pw);
  const py = (y: number) => PAD.top + ph - ((y - yMin) / (yMax - yMin || 1)) * ph;
  const parts: string[] = [head];
  for (const t of ticks(yMin, yMax, 5)) {
    parts.push(`<line x1="${PAD.left}" x2="${PAD.left + pw}" y1="${py(t).toFixed(1)}" y2="${py(t).toFixed(1)}" stroke="#e5e5e5"/>`,
      `<text x="${PAD.left - 6}" y="${(py(t) + 4).toFixed(1)}" text-anchor="end" font-size="11" fill="#555">${fmt(t)}</text>`);
  }
  parts.push(`<line x1="${PAD.left}" x2="${PAD.left}" y1="${PAD.top}" y2="${PAD.top + ph}" stroke="#999"/>`,
    `<line x1="${PAD.left}" x2="${PAD.left + pw}" y1="${PAD.top + ph}" y2="${PAD.top + ph}" stroke="#999"/>`,
    `<text transform="translate(14 ${PAD.top + ph / 2}) rotate(-90)" text-anchor="middle" font-size="11" fill="#555">${escapeHtml(spec.yLabel)}</text>`);
  const xTicks = numeric ? ticks(x0, x1, 6) : xs;
  for (const t of xTicks) {
    const label = numeric ? fmt(t) : String(spec.x[t]);
    parts.push(`<text x="${px(t).toFixed(1)}" y="${PAD.top + ph + 16}" text-anchor="middle" font-size="11" fill="#555">${escapeHtml(label)}</text>`);
  }
  if (numeric) {
    for (const m of spec.marks ?? []) {
      if (m.x < x0 || m.x > x1) continue;
      parts.push(`<line x1="${px(m.x).toFixed(1)}" x2="${px(m.x).toFixed(1)}" y1="${PAD.top}" y2="${PAD.top + ph}" stroke="#bbb" stroke-dasharray="3 3"/>`,
        `<text x="${(px(m.x) + 3).toFixed(1)}" y="${PAD.top + 10}" font-size="10" fill="#777">${escapeHtml(m.label)}</text>`);
    }
  }
  const markers = !numeric || spec.x.length <= 40;
  spec.series.forEach((s, si) => {
    const pts = s.values.map((v, i) => (v === null || !Number.isFinite(v) ? null : `${px(xs[i]!).toFixed(1)},${py(v).toFixed(1)}`));
    for (const run of runs(pts)) {
      parts.push(`<polyline fill="none" stroke="${s.color}" stroke-width="2.5"${s.dashed ? ' stroke-dasharray="6 4"' : ''} points="${run.join(' ')}"/>`);
    }
    if (markers) for (const p of pts) if (p) parts.push(`<circle cx="${p.split(',')[0]}" cy="${p.split(',')[1]}" r="4.5" fill="${s.color}"/>`);
    const lx = PAD.left + si * Math.min(130, pw / spec.series.length);
    parts.push(`<rect x="${lx}" y="${h - 16}" width="12" height="10" fill="${s.color}"/>`,
      `<text x="${lx + 16}" y="${h - 7}" font-size="11" fill="#333">${escapeHtml(s.name)}</text>`);
  });
  parts.push('</svg>');
  return parts.join('');
}

/** Consecutive non-null points, so a missing value breaks the line instead of bridging it. */
function runs(pts: (string | null)[]): string[][] {
  const out: string[][] = [];
  let cur: string[] = [];
  for (const p of pts) {
    if (p) cur.push(p);
    else if (cur.length) (out.push(cur), (cur = []));
  }
  if (cur.length) out.push(cur);
  return out;
}

function niceStep(range: number, count: number): number {
  const raw = range / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const f = raw / mag;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

function niceCeil(v: number): number {
  if (v <= 0) return 1;
  const step = niceStep(v, 5);
  return Math.ceil(v / step) * step;
}

function ticks(lo: number, hi: number, count: number): number[] {
  if (hi <= lo) return [lo];
  const step = niceStep(hi - lo, count);
  const out: number[] = [];
  for (let t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) out.push(Number(t.toPrecision(12)));
  return out;
}

function fmt(v: number): string {
  if (v === 0) return '0';
  const a = Math.abs(v);
  if (a >= 1e6) return `${(v / 1e6).toPrecision(3)}M`;
  if (a >= 1e4) return `${(v / 1e3).toPrecision(3)}k`;
  return Number(v.toPrecision(4)).toString();
}
