/**
 * The ops files shipped in the repository, generated from examples/infermeter.yaml:
 * Prometheus rules, the Kubernetes PrometheusRule, and the Grafana dashboards. Tests
 * compare the committed files with this output so they never drift;
 * `npm run generate:ops` rewrites them.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dashboards } from './dashboards.js';
import { commandLine, readSloConfig } from './rules-command.js';
import { generateRules, renderRules } from './rules.js';

export const EXAMPLE_CONFIG = 'examples/infermeter.yaml';

export interface ShippedFile {
  path: string;
  text: string;
}

export function shippedFiles(root: string): ShippedFile[] {
  const slos = readSloConfig(join(root, EXAMPLE_CONFIG));
  const groups = generateRules(slos);
  const base = { config: EXAMPLE_CONFIG, job: 'infermeter' };
  return [
    { path: 'deploy/prometheus/rules.yml', text: renderRules(groups, { format: 'prometheus', generatedBy: commandLine({ ...base, format: 'prometheus' }) }) },
    {
      path: 'deploy/kubernetes/prometheusrule.yaml',
      text: renderRules(groups, { format: 'prometheusrule', generatedBy: commandLine({ ...base, format: 'prometheusrule' }) }),
    },
    ...dashboards(slos).map((d) => ({ path: `grafana/dashboards/${d.file}`, text: JSON.stringify(d.json, null, 2) + '\n' })),
  ];
}

/** The repository root, from dist/src/ops/shipped.js or src/ops/shipped.ts. */
export function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!dir.endsWith('/src') && dir !== '/') dir = dirname(dir);
  dir = dirname(dir);
  return dir.endsWith('/dist') ? dirname(dir) : dir;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = repoRoot();
  for (const f of shippedFiles(root)) {
    mkdirSync(dirname(join(root, f.path)), { recursive: true });
    writeFileSync(join(root, f.path), f.text);
    process.stdout.write(`wrote ${f.path}\n`);
  }
}
