import { test } from 'node:test';
import assert from 'node:assert/strict';
import { catalog } from '../../../src/metrics/catalog.js';
import { type MetricDef } from '../../../src/lib/metric-def.js';
import { parseSloConfig } from '../../../src/slo/config.js';
import { dashboardQueries } from '../../../src/ops/dashboards-kit.js';
import { dashboards } from '../../../src/ops/dashboards.js';
import { M } from '../../../src/slo/names.js';
import { generateRules } from '../../../src/ops/rules.js';
import { readSloConfig } from '../../../src/ops/rules-command.js';
import { repoRoot } from '../../../src/ops/shipped.js';
import { join } from 'node:path';
import { metricNames } from './rules-helpers.js';

const defs = new Map<string, MetricDef>(catalog().map((d) => [d.name, d]));

/** A name as exported: histograms add _bucket/_sum/_count. */
function known(name: string): boolean {
  if (defs.has(name)) return true;
  const base = name.replace(/_(bucket|sum|count)$/, '');
  return base !== name && defs.get(base)?.type === 'histogram';
}

function check(name: string, where: string, recorded: Set<string>): void {
  if (name === 'up' || recorded.has(name)) return;
  assert.ok(known(name), `${where}: metric ${name} is not in the catalog (src/metrics/catalog.ts)`);
}

test('every metric name the rules and dashboards read is in the catalog', () => {
  for (const name of Object.values(M)) check(name, 'names.ts', new Set());
  const slos = readSloConfig(join(repoRoot(), 'examples/infermeter.yaml'));
  const rules = generateRules(slos).flatMap((g) => g.rules);
  const recorded = new Set(rules.flatMap((r) => (r.record ? [r.record] : [])));
  for (const r of rules) for (const n of metricNames(r.expr)) check(n, `rule ${r.record ?? r.alert}`, recorded);
  for (const d of dashboards(slos)) {
    // Dashboards may read what the shipped rules record (energy per token), nothing else outside the catalog.
    for (const q of dashboardQueries(d.json)) for (const n of metricNames(q.expr)) check(n, `${d.file} ${q.where}`, recorded);
  }
});

test('label names used in grouping exist on the metrics they group', () => {
  const slos = parseSloConfig({ default: { ttft: 1 } }, 'test');
  const rules = generateRules(slos).flatMap((g) => g.rules);
  for (const r of rules.filter((x) => x.record)) {
    const by = /by \(([^)]*)\)/.exec(r.expr)![1]!.split(',').map((s) => s.trim());
    const metric = metricNames(r.expr)[0]!.replace(/_bucket$/, '');
    // instance: the target label Prometheus adds to every scraped series.
    const labels = new Set([...defs.get(metric)!.labels, 'le', 'instance']);
    for (const l of by) assert.ok(labels.has(l), `${r.record}: ${metric} has no label ${l}`);
  }
});

test('the metric-name extractor', () => {
  assert.deepEqual(metricNames('sum by (le, a) (rate(x_bucket{a=~"b|c", d="e(f)"}[5m])) / on () y > 0 and absent(up{job="j"})'), ['x_bucket', 'y', 'up']);
  assert.deepEqual(metricNames('time() - a:b:c{x="1"} > 60'), ['a:b:c']);
  assert.deepEqual(metricNames('histogram_quantile(0.99, sum by (le) (rate(m[$__rate_interval])))'), ['m']);
});
