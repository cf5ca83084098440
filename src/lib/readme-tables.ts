/**
 * README's flag and metric tables are generated from the option table and the metric
 * catalog (`npm run docs`), and a test keeps the committed README in step.
 */
import { OPTIONS, envName, flagName } from '../config.js';
import { catalog } from '../metrics/catalog.js';

export function flagTable(): string {
  const rows = OPTIONS.map((o) => `| \`${flagName(o)}\` | \`${envName(o)}\` | ${o.default === undefined ? '(required)' : o.default === '' ? '' : `\`${o.default}\``} | ${o.help.replace(/\|/g, '\\|')} |`);
  return ['| flag | environment | default | meaning |', '| --- | --- | --- | --- |', '| `--config` | `INFERMETER_CONFIG` | | YAML config file: keys as the camelCase flag names (e.g. `idleTimeout`), plus `slos` and `buckets` |', ...rows].join('\n');
}

export function metricTable(): string {
  const rows = catalog().map((m) => `| \`${m.name}\` | ${m.type} | ${m.labels.map((l) => `\`${l}\``).join(', ')} | ${m.help.replace(/\|/g, '\\|')} |`);
  return ['| name | type | labels | meaning |', '| --- | --- | --- | --- |', ...rows].join('\n');
}

const MARK = (name: string) => [`<!-- generated:${name} -->`, `<!-- /generated:${name} -->`] as const;

/** Replaces the text between the markers of each generated block. */
export function renderReadme(readme: string): string {
  let out = readme;
  for (const [name, body] of [['flags', flagTable()], ['metrics', metricTable()]] as const) {
    const [open, close] = MARK(name);
    const a = out.indexOf(open);
    const b = out.indexOf(close);
    if (a < 0 || b < a) throw new Error(`README.md lacks the ${open} … ${close} markers`);
    out = `${out.slice(0, a + open.length)}\n${body}\n${out.slice(b)}`;
  }
  return out;
}
