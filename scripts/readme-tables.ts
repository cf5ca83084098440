/**
 * README's flag and metric tables are generated from the option table and the metric
 * catalog (`npm run docs`), and a test keeps the committed README in step.
 */
import { OPTIONS, envName, flagName } from '../src/config.js';
import { catalog } from '../src/metrics/catalog.js';
import { countSeries, total } from '../src/metrics/series-count.js';
import type { SloConfig } from '../src/slo/config.js';

export function flagTable(): string {
  const rows = OPTIONS.map((o) => `| \`${flagName(o)}\` | \`${envName(o)}\` | ${o.default === undefined ? '(required)' : o.default === '' ? '' : `\`${o.default}\``} | ${o.help.replace(/\|/g, '\\|')} |`);
  return ['| flag | environment | default | meaning |', '| --- | --- | --- | --- |', '| `--config` | `INFERMETER_CONFIG` | | YAML config file: keys as the camelCase flag names (e.g. `idleTimeout`), plus `slos`, `buckets` and `upstreams` |', '| `--print-config` | | | print the effective configuration, each value with its source (flag, env, file, default; secrets redacted), and exit |', ...rows].join('\n');
}

/** Worst-case series counts for README (series-count.ts): per model at defaults, and the 10 models × 20 tenants total. */
export interface SeriesFacts {
  /** Metric → the series each further model label value adds at defaults (tenants off, the example SLOs), or `<n> in all` when it adds none. */
  perModel: Map<string, string>;
  /** Total series with 10 models and 20 tenants (--tenant-header, defaults otherwise), and with more tenants than the limit. */
  tenModelsTwentyTenants: number;
  tenModelsTenantsOverLimit: number;
}

/** Measures the facts above (renders real /metrics text several times: tens of ms). */
export async function seriesFacts(slos: SloConfig): Promise<SeriesFacts> {
  const one = await countSeries({ models: 1, tenants: 0, slos });
  const two = await countSeries({ models: 2, tenants: 0, slos });
  const perModel = new Map<string, string>();
  for (const m of catalog()) {
    const a = one.get(m.name);
    if (a === undefined) continue;
    const added = two.get(m.name)! - a;
    perModel.set(m.name, added > 0 ? String(added) : `${a} in all`);
  }
  const twenty = total(await countSeries({ models: 10, tenants: 20, slos }));
  const over = total(await countSeries({ models: 10, tenants: 40, slos }));
  return { perModel, tenModelsTwentyTenants: twenty, tenModelsTenantsOverLimit: over };
}

export function metricTable(series: SeriesFacts): string {
  const rows = catalog().map((m) => {
    const n = series.perModel.get(m.name);
    return `| \`${m.name}\` | ${m.type} | ${m.labels.map((l) => `\`${l}\``).join(', ')} | ${n === undefined ? '' : n} | ${m.help.replace(/\|/g, '\\|')} |`;
  });
  return [
    '| name | type | labels | worst-case series per model | meaning |', '| --- | --- | --- | --- | --- |', ...rows, '',
    'Worst-case series per model: how many series each model label value adds with every other setting at its default (tenants off) and the SLOs of `examples/infermeter.yaml`, every route, outcome, operation, prompt class and concurrency band seen; "in all" for families that do not grow with models. With tenants on, multiply the counters (`infermeter_requests_total`, `infermeter_tokens_total`, the SLO counters, goodput) by the tenant values (at most `--tenant-limit` + 1), and the histograms too with `--tenant-histograms`. The `tenant` label is absent while tenants are off.',
    '',
    `Worst case in all with 10 models and 20 tenants (\`--tenant-header\`, every other setting at its default, the SLOs of \`examples/infermeter.yaml\`): **${series.tenModelsTwentyTenants}** request-metric series; with more tenants than \`--tenant-limit\` (20 and \`other\`): **${series.tenModelsTenantsOverLimit}**. Measured by rendering /metrics after every combination of label values (\`src/metrics/series-count.ts\`).`,
  ].join('\n');
}

const MARK = (name: string) => [`<!-- generated:${name} -->`, `<!-- /generated:${name} -->`] as const;

/** Replaces the text between the markers of each generated block. */
export function renderReadme(readme: string, series: SeriesFacts): string {
  let out = readme;
  for (const [name, body] of [['flags', flagTable()], ['metrics', metricTable(series)]] as const) {
    const [open, close] = MARK(name);
    const a = out.indexOf(open);
    const b = out.indexOf(close);
    if (a < 0 || b < a) throw new Error(`README.md lacks the ${open} … ${close} markers`);
    out = `${out.slice(0, a + open.length)}\n${body}\n${out.slice(b)}`;
  }
  return out;
}
