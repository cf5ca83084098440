/**
 * Helpers for the deploy/ tests: repository paths, YAML loading, and the flags a command
 * line uses, checked against infermeter's own option table.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments, parse } from 'yaml';
import { OPTIONS } from '../../src/config.js';

export const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

export function repoPath(p: string): string {
  return ROOT + p;
}

export function readRepo(p: string): string {
  return readFileSync(repoPath(p), 'utf8');
}

export function yamlFile<T = Record<string, unknown>>(p: string): T {
  return parse(readRepo(p)) as T;
}

export function yamlDocuments(p: string): Record<string, unknown>[] {
  return parseAllDocuments(readRepo(p)).map((d) => {
    if (d.errors.length > 0) throw new Error(`${p}: ${d.errors[0]!.message}`);
    return d.toJS() as Record<string, unknown>;
  }).filter((d) => d !== null);
}

/** Files the slo branch writes (SLO example config, rules, dashboards); checked when present. */
/** Every `--flag` the daemon accepts (plus --config, --help, --version). */
export const DAEMON_FLAGS = new Set([...OPTIONS.map((o) => o.flag.split(' ')[0]!), '--config', '--help', '--version']);

/** The `--flag` tokens of an argv (`--flag=value` and `--flag value` alike). */
export function flagsOf(argv: readonly string[]): string[] {
  return argv.filter((a) => a.startsWith('--')).map((a) => a.split('=')[0]!);
}

/** The value following `--flag` (or after `=`) in an argv. */
export function flagValue(argv: readonly string[], flag: string): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === flag) return argv[i + 1];
    if (argv[i]!.startsWith(flag + '=')) return argv[i]!.slice(flag.length + 1);
  }
  return undefined;
}

export function defaultPort(key: 'listen' | 'metricsListen'): number {
  return Number(OPTIONS.find((o) => o.key === key)!.default!.split(':').pop());
}
