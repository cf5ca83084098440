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

export async function renderOpenMetrics(registry: Registry): Promise<string> {
  const families = (await registry.getMetricsAsJSON()) as Json[];
  const out: string[] = [];
  for (const f of families) renderFamily(f, out);
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
  for (const v of f.values) {
    const name = (v as MetricValueWithName<string>).metricName ?? sampleName;
    let line = `${name}${labels(v.labels as Record<string, string | number>)} ${number(v.value)}`;
    const ex = (v as { exemplar?: ExemplarValue | null }).exemplar;
    if (ex) line += ` # ${labels(ex.labelSet)} ${number(ex.value)}${ex.timestamp !== undefined ? ` ${ex.timestamp.toFixed(3)}` : ''}`;
    out.push(line);
  }
}

function labels(l: Record<string, string | number> | undefined): string {
  if (!l) return '';
  const parts: string[] = [];
  for (const k in l) if (l[k] !== undefined) parts.push(`${k}="${escape(String(l[k]))}"`);
  return parts.length ? `{${parts.join(',')}}` : '';
}

function escape(s: string): string {
  return s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

function number(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return String(v);
}
