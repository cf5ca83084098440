/**
 * The OpenMetrics 1.0 text exposition of a registry, for a scraper that asks for it
 * (negotiate.ts): what carries exemplars on histogram buckets. Rendered from prom-client's
 * JSON view, as the protobuf exposition is, because prom-client's own OpenMetrics mode
 * renames counters in place (it would change the 0.0.4 text too) and writes no UNIT.
 * Sample names and label values are those of the 0.0.4 text, so a Prometheus that switches
 * format keeps the same series: a counter family named `x_total` is family `x` with sample
 * `x_total`; a counter without `_total` (which OpenMetrics would rename) is typed unknown.
 */
import type { MetricObjectWithValues, MetricValue, MetricValueWithName, Registry } from 'prom-client';

export const OPENMETRICS_CONTENT_TYPE = 'application/openmetrics-text; version=1.0.0; charset=utf-8';

/** Suffixes that are units (base units, STYLE.md): declared with # UNIT. */
const UNITS = ['seconds', 'bytes', 'ratio', 'watts', 'celsius', 'hertz', 'joules'];

type Json = MetricObjectWithValues<MetricValue<string> | MetricValueWithName<string>>;
interface ExemplarValue { labelSet: Record<string, string>; value: number; timestamp?: number }
type Labels = Record<string, string | number>;
/** What a metric's getForPromString() answers (histogram.ts, counter.ts): a series' labels shared by its values. */
type Shared = { sharedLabels?: Labels };
interface Renderable { get(): Promise<Json> | Json; getForPromString?(): Promise<Json> }

/** No default labels are set on infermeter's registries (getMetricsAsJSON would add them; this does not). */
export async function renderOpenMetrics(registry: Registry): Promise<string> {
  const out: string[] = [];
  for (const m of registry.getMetricsAsArray() as unknown as Renderable[]) {
    // The series-shaped view where there is one: its shared labels are formatted once per series.
    renderFamily(await (m.getForPromString ? m.getForPromString() : m.get()), out);
  }
  out.push('# EOF\n');
  return out.join('\n');
}

function renderFamily(f: Json, out: string[]): void {
  let type = String(f.type);
  let family = f.name;
  const sampleName = f.name;
  if (type === 'counter') {
    if (f.name.endsWith('_total')) family = f.name.slice(0, -'_total'.length);
    else type = 'unknown';
  } else if (type !== 'gauge' && type !== 'histogram' && type !== 'summary') type = 'unknown';
  out.push(`# TYPE ${family} ${type}`);
  const unit = UNITS.find((u) => family.endsWith(`_${u}`));
  if (unit) out.push(`# UNIT ${family} ${unit}`);
  if (f.help) out.push(`# HELP ${family} ${escape(f.help)}`);
  let lastShared: Labels | undefined;
  let sharedText = '';
  for (const v of f.values) {
    const name = (v as MetricValueWithName<string>).metricName ?? sampleName;
    const shared = (v as Shared).sharedLabels;
    if (shared !== lastShared) {
      lastShared = shared;
      sharedText = shared ? labelPairs(shared) : '';
    }
    const own = labelPairs(v.labels as Labels);
    const all = own && sharedText ? `${own},${sharedText}` : own || sharedText;
    let line = `${name}${all ? `{${all}}` : ''} ${number(v.value)}`;
    const ex = (v as { exemplar?: ExemplarValue | null }).exemplar;
    if (ex) line += ` # ${labels(ex.labelSet)} ${number(ex.value)}${ex.timestamp !== undefined ? ` ${ex.timestamp.toFixed(3)}` : ''}`;
    out.push(line);
  }
}

function labelPairs(l: Labels | undefined): string {
  let out = '';
  for (const k in l) {
    const v = l[k];
    if (v === undefined) continue;
    out += `${out ? ',' : ''}${k}="${typeof v === 'number' ? v : escape(v)}"`;
  }
  return out;
}

function labels(l: Labels | undefined): string {
  const pairs = labelPairs(l);
  return pairs ? `{${pairs}}` : '';
}

function escape(s: string): string {
  if (!/[\\\n"]/.test(s)) return s;
  return s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

function number(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return String(v);
}
