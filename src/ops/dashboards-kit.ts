/**
 * A small builder for Grafana dashboard JSON (schemaVersion 39): rows of panels laid out
 * on the 24-column grid, Prometheus targets on the `$datasource` variable, and the
 * template variables every infermeter dashboard has. Data only, no Grafana dependency.
 */

export const DS = { type: 'prometheus', uid: '${datasource}' } as const;

/** A ratio that is 0 (not missing) with an empty numerator and missing (not NaN) with a zero denominator. */
export function guardedRatio(num: string, den: string): string {
  return `(\n  ${num}\n  or\n  0 * ${den}\n)\n/\n(${den} > 0)`;
}

export interface Target {
  expr: string;
  legend: string;
  /** Ask Prometheus for exemplars too (trace ids on latency buckets; the dots link to $tracing). */
  exemplar?: boolean;
}

export interface PanelSpec {
  title: string;
  description: string;
  type?: 'timeseries' | 'stat' | 'bargauge';
  unit: string;
  targets: Target[];
  /** Width in grid columns (24 = full width); height in grid rows. */
  w?: number;
  h?: number;
  min?: number;
  max?: number;
  /** Horizontal threshold lines/colours (value, colour). */
  thresholds?: [number, string][];
  /** Colour below the first threshold (default green). */
  baseColor?: string;
}

export interface RowSpec {
  title: string;
  panels: PanelSpec[];
}

export interface DashboardSpec {
  uid: string;
  title: string;
  description: string;
  variables: Variable[];
  rows: RowSpec[];
}

export type Variable = Record<string, unknown> & { name: string };

export function datasourceVariable(): Variable {
  return { name: 'datasource', label: 'Data source', type: 'datasource', query: 'prometheus', current: {}, hide: 0, refresh: 1, options: [] };
}

/** Where exemplar trace ids lead: a Tempo (or Jaeger/Zipkin) datasource, chosen per dashboard. */
export function tracingDatasourceVariable(): Variable {
  return { name: 'tracing', label: 'Tracing data source', type: 'datasource', query: 'tempo', current: {}, hide: 0, refresh: 1, options: [] };
}

/** A multi-value variable over a label of a metric, "All" meaning any value. */
export function labelVariable(name: string, label: string, metricSelector: string, title: string): Variable {
  const query = `label_values(${metricSelector}, ${label})`;
  return {
    name,
    label: title,
    type: 'query',
    datasource: DS,
    definition: query,
    query: { query, refId: `${name}-variable` },
    refresh: 2,
    multi: true,
    includeAll: true,
    allValue: '.*',
    current: { selected: true, text: ['All'], value: ['$__all'] },
    sort: 1,
    hide: 0,
    options: [],
  };
}

/** A panel link to Explore on the tracing datasource, for panels whose exemplars carry trace ids. */
const TRACE_LINK = { title: 'Traces in ${tracing}', url: '/explore?left={"datasource":"${tracing}","queries":[{"refId":"A","queryType":"traceqlSearch"}]}', targetBlank: true };

function panelJson(p: PanelSpec, id: number, x: number, y: number): Record<string, unknown> {
  const type = p.type ?? 'timeseries';
  const thresholds = {
    mode: 'absolute',
    steps: [{ color: p.baseColor ?? 'green', value: null }, ...(p.thresholds ?? []).map(([value, color]) => ({ color, value }))],
  };
  const defaults: Record<string, unknown> = { unit: p.unit, thresholds, color: { mode: type === 'timeseries' ? 'palette-classic' : 'thresholds' } };
  if (p.min !== undefined) defaults['min'] = p.min;
  if (p.max !== undefined) defaults['max'] = p.max;
  if (type === 'timeseries') {
    defaults['custom'] = { drawStyle: 'line', lineWidth: 1, fillOpacity: 0, showPoints: 'never', spanNulls: false, thresholdsStyle: { mode: p.thresholds ? 'line' : 'off' } };
  }
  const options =
    type === 'timeseries'
      ? { legend: { displayMode: 'table', placement: 'bottom', showLegend: true, calcs: ['lastNotNull', 'max'] }, tooltip: { mode: 'multi', sort: 'desc' } }
      : { reduceOptions: { calcs: ['lastNotNull'], fields: '', values: false }, orientation: 'auto', textMode: 'auto', colorMode: 'value' };
  return {
    id,
    type,
    title: p.title,
    description: p.description,
    datasource: DS,
    gridPos: { x, y, w: p.w ?? 12, h: p.h ?? 8 },
    fieldConfig: { defaults, overrides: [] },
    options,
    targets: p.targets.map((t, i) => ({
      refId: String.fromCharCode(65 + i),
      datasource: DS,
      expr: t.expr,
      legendFormat: t.legend,
      range: true,
      instant: false,
      ...(t.exemplar && { exemplar: true }),
    })),
    ...(p.targets.some((t) => t.exemplar) && { links: [TRACE_LINK] }),
  };
}

export function dashboardJson(spec: DashboardSpec): Record<string, unknown> {
  const panels: Record<string, unknown>[] = [];
  let id = 1;
  let y = 0;
  for (const row of spec.rows) {
    panels.push({ id: id++, type: 'row', title: row.title, collapsed: false, gridPos: { x: 0, y, w: 24, h: 1 }, panels: [] });
    y += 1;
    let x = 0;
    let rowHeight = 0;
    for (const p of row.panels) {
      const w = p.w ?? 12;
      if (x + w > 24) {
        x = 0;
        y += rowHeight;
        rowHeight = 0;
      }
      panels.push(panelJson(p, id++, x, y));
      x += w;
      rowHeight = Math.max(rowHeight, p.h ?? 8);
    }
    y += rowHeight;
  }
  return {
    uid: spec.uid,
    title: spec.title,
    description: spec.description,
    tags: ['infermeter', 'llm', 'inference'],
    timezone: '',
    editable: true,
    graphTooltip: 1,
    refresh: '30s',
    schemaVersion: 39,
    version: 1,
    time: { from: 'now-1h', to: 'now' },
    templating: { list: spec.variables },
    annotations: { list: [] },
    links: [{ title: 'infermeter', type: 'dashboards', tags: ['infermeter'], asDropdown: true, includeVars: true, keepTime: true }],
    panels,
  };
}

/** Every PromQL expression of a dashboard: panel targets first, then variable queries. */
export function dashboardQueries(json: Record<string, unknown>): { where: string; expr: string }[] {
  const out: { where: string; expr: string }[] = [];
  for (const p of json['panels'] as { title: string; targets?: { refId: string; expr: string }[] }[]) {
    for (const t of p.targets ?? []) out.push({ where: `panel "${p.title}" ${t.refId}`, expr: t.expr });
  }
  return out;
}
