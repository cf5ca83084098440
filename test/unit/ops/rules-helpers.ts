/** Helpers shared by the rules and dashboards tests: PromQL metric names, promtool. */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';

const KEYWORDS = new Set(['and', 'or', 'unless', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'offset', 'bool', 'inf', 'nan']);

/**
 * Metric names a PromQL expression reads. Good enough for generated expressions: drops
 * strings, label matchers, grouping clauses and ranges, then keeps identifiers that are
 * not functions or keywords.
 */
export function metricNames(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"|`[^`]*`/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ');
  const names = new Set<string>();
  for (const m of stripped.matchAll(/(?<![\w:.$])([a-zA-Z_:][\w:]*)/g)) {
    const name = m[1]!;
    const isCall = /^\s*\(/.test(stripped.slice(m.index + name.length));
    if (!isCall && !KEYWORDS.has(name.toLowerCase())) names.add(name);
  }
  return [...names];
}

export function hasPromtool(): boolean {
  return spawnSync('promtool', ['--version']).status === 0;
}

export function promtool(args: string[], cwd?: string): { status: number | null; output: string } {
  const r = spawnSync('promtool', args, { cwd, encoding: 'utf8' });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

/** Runs `promtool check rules` on expressions, each as a recording rule: a PromQL syntax check. */
export function checkExpressions(exprs: string[]): { status: number | null; output: string } {
  const dir = mkdtempSync(join(tmpdir(), 'infermeter-promql-'));
  try {
    const file = join(dir, 'exprs.yml');
    writeFileSync(file, stringify({ groups: [{ name: 'check', rules: exprs.map((expr, i) => ({ record: `check:expr:${i}`, expr })) }] }));
    return promtool(['check', 'rules', file]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Grafana's variables, replaced the way Grafana does before a query reaches Prometheus. */
export function substituteVariables(expr: string, vars: Record<string, string> = {}): string {
  return expr
    .replaceAll('$__rate_interval', vars['__rate_interval'] ?? '1m')
    .replaceAll('$__range', vars['__range'] ?? '1h')
    .replaceAll('$instance', vars['instance'] ?? '.*')
    .replaceAll('$model', vars['model'] ?? '.*');
}
