/**
 * `--print-config` and the startup line: the effective configuration, each setting with where
 * its value came from (flag, env, file, default), secrets redacted. The printed text is YAML
 * whose keys are the config file's, `upstreams:` (when the file gave a list), `slos:` and the
 * file's `buckets:` included (tracing, from the environment, is a comment), so, secrets aside,
 * it can be saved as a config file that gives the same configuration
 * (test/unit/daemon/print-config.test.ts reads it back).
 */
import { stringify } from 'yaml';
import { OPTIONS, envName, flagName, type Config, type SettingSource } from '../config.js';
import type { SloConfig } from '../slo/config.js';

export const REDACTED = '<redacted>';

/** A setting's value as plain data: host:port for listeners, secrets redacted (URLs never keep credentials: parse.ts keeps origin and path). */
function printable(key: string, value: unknown, secret: boolean): unknown {
  if (secret) return value === '' || value === undefined ? '' : REDACTED;
  if (value && typeof value === 'object' && 'host' in value && 'port' in value) {
    const hp = value as { host: string; port: number };
    return `${hp.host.includes(':') ? `[${hp.host}]` : hp.host}:${hp.port}`;
  }
  // The tokenizer list as its flag spells it (name=path, a bare path for every model), which the file reads back.
  if (key === 'tokenizers' && Array.isArray(value)) {
    return (value as { name: string; path: string }[]).map((t) => (t.name === '*' ? t.path : `${t.name}=${t.path}`)).join(',');
  }
  return value;
}

function where(cfg: Config, key: string, source: SettingSource): string {
  const spec = OPTIONS.find((o) => o.key === key);
  if (source === 'flag') return spec ? `flag ${flagName(spec)}` : 'flag --config';
  if (source === 'env') return spec ? `env ${envName(spec)}` : 'env INFERMETER_CONFIG';
  if (source === 'file') return `file ${cfg.configFile ?? ''}`;
  return 'default';
}

function scalar(value: unknown): string {
  return stringify(value, { collectionStyle: 'flow', lineWidth: 0 }).trimEnd();
}

/**
 * The config file's `upstreams:` list is in effect (--upstream came from neither flag nor
 * environment): printed in full, in place of the `upstream` line (a file may not hold both).
 */
function upstreamList(cfg: Config): boolean {
  return cfg.origins['upstreams'] === 'file' && cfg.sources.cli['upstream'] === undefined && cfg.sources.env['INFERMETER_UPSTREAM'] === undefined;
}

/** The effective configuration as YAML, one line per setting, its source as a comment; then `slos:` and the file's `buckets:` as the file writes them. */
export function renderConfig(cfg: Config): string {
  const lines = ['# infermeter: the effective configuration; after each value, where it came from (flag, env, file, default)'];
  for (const o of OPTIONS) {
    const source = cfg.origins[o.key] ?? 'default';
    if (o.key === 'upstream' && upstreamList(cfg)) {
      lines.push(`# upstream: the first of upstreams (${where(cfg, o.key, source)})`);
      const list = stringify({ upstreams: cfg.upstreams.map(({ name, url, ...rest }) => ({ name, url, ...rest })) }, { lineWidth: 0 }).trimEnd().split('\n');
      lines.push(`${list[0]} # ${where(cfg, 'upstreams', 'file')}`, ...list.slice(1));
      continue;
    }
    lines.push(`${o.key}: ${scalar(printable(o.key, cfg[o.key], o.secret === true))} # ${where(cfg, o.key, source)}`);
  }
  const file = cfg.configFile ? `file ${cfg.configFile}` : 'default';
  lines.push(`# config file: ${cfg.configFile ?? 'none'}${cfg.configFile ? ` (${where(cfg, 'configFile', cfg.origins['configFile'] ?? 'flag')})` : ''}`);
  lines.push(`# slos (${cfg.origins['slos'] === 'file' ? file : 'default'}), thresholds in seconds:`, block({ slos: sloSection(cfg.slos) }));
  // Default buckets stay a comment, so a saved print does not pin them; the file's are printed whole (thresholds inserted again on reading are already there).
  if (cfg.origins['buckets'] === 'file') lines.push(`# buckets (${file}, SLO thresholds inserted):`, block({ buckets: cfg.buckets }));
  else lines.push(`# buckets (default, SLO thresholds inserted): ${JSON.stringify(cfg.buckets)}`);
  lines.push(`# tracing: ${cfg.tracing ? `on (${cfg.tracing.protocol}, ${cfg.tracing.sampler}), from the OTEL_* environment` : 'off (OTEL_TRACES_EXPORTER is not otlp)'}`);
  return `${lines.join('\n')}\n`;
}

function block(section: Record<string, unknown>): string {
  return stringify(section, { lineWidth: 0 }).trimEnd();
}

/** The SLO config under the file's own key names (prompt_classes, prompt_tokens_le). */
function sloSection(slos: SloConfig): Record<string, unknown> {
  return {
    objective: slos.objective,
    window: slos.window,
    default: slos.default,
    models: slos.models,
    prompt_classes: slos.promptClasses.map((c) => ({ prompt_tokens_le: c.promptTokensLe, ...c.thresholds })),
  };
}

/** The startup log line's fields: every value (secrets redacted), and the source of each one not defaulted. */
export function configLogFields(cfg: Config): { settings: Record<string, unknown>; from: Record<string, string> } {
  const settings: Record<string, unknown> = {};
  const from: Record<string, string> = {};
  for (const o of OPTIONS) {
    settings[o.key] = printable(o.key, cfg[o.key], o.secret === true);
    const source = cfg.origins[o.key] ?? 'default';
    if (source !== 'default') from[o.key] = source;
  }
  if (upstreamList(cfg)) {
    settings['upstreams'] = cfg.upstreams;
    from['upstreams'] = 'file';
  }
  if (cfg.configFile) from['configFile'] = cfg.origins['configFile'] ?? 'flag';
  return { settings, from };
}
