/**
 * The YAML config file: read once per resolution, its keys checked against the flag table and
 * its three sections (slos, buckets, upstreams). Pure but for the one read.
 */
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { ConfigError, UnreadableFileError } from '../lib/errors.js';
import { DEFAULT_BUCKETS, type BucketSet } from '../lib/metric-def.js';
import { nearest } from '../lib/nearest.js';
import { thresholdsInBucketSet, type SloConfig } from '../slo/config.js';
import { FLAG_KEYS } from './flags.js';

export type ConfigFile = Record<string, unknown>;

export function readConfigFile(path: string): ConfigFile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new UnreadableFileError('--config', `cannot read ${path}: ${(err as Error).message}`, { cause: err });
  }
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (err) {
    throw new ConfigError('--config', `${path} is not valid YAML: ${(err as Error).message}`, { cause: err });
  }
  if (doc === null || doc === undefined) return {};
  if (typeof doc !== 'object' || Array.isArray(doc)) throw new ConfigError('--config', `${path} must hold a YAML mapping`);
  return doc as ConfigFile;
}

/** Only the keys of the flag table, plus slos, buckets and upstreams: anything else stops with the same message everywhere. */
export function checkFileKeys(file: ConfigFile, configFile: string | null): void {
  const known: string[] = [...FLAG_KEYS, 'slos', 'buckets', 'upstreams'];
  const unknown = Object.keys(file).filter((k) => !known.includes(k));
  if (unknown.length === 0) return;
  const hints = unknown.flatMap((k) => {
    const near = nearest(k, known);
    return near ? [`${k}: did you mean ${near}?`] : [];
  });
  throw new ConfigError(`--config ${configFile}`, `unknown key(s): ${unknown.join(', ')} (expected keys of the flag table, slos, buckets or upstreams${hints.length ? `; ${hints.join('; ')}` : ''})`);
}

/** Configured buckets (or defaults), with every SLO threshold inserted as a boundary. */
export function resolveBuckets(raw: unknown, slos: SloConfig, where: string): Record<BucketSet, number[]> {
  const out = {} as Record<BucketSet, number[]>;
  const given = (raw ?? {}) as Record<string, unknown>;
  if (typeof given !== 'object' || Array.isArray(given)) throw new ConfigError(where, 'expected a mapping of bucket set to a list of numbers');
  for (const key of Object.keys(given)) {
    if (!(key in DEFAULT_BUCKETS)) throw new ConfigError(`${where}.${key}`, `unknown bucket set; expected one of ${Object.keys(DEFAULT_BUCKETS).join(', ')}`);
  }
  for (const set of Object.keys(DEFAULT_BUCKETS) as BucketSet[]) {
    const list = given[set] ?? DEFAULT_BUCKETS[set];
    if (!Array.isArray(list) || list.length === 0 || !list.every((n) => typeof n === 'number' && Number.isFinite(n) && n > 0)) {
      throw new ConfigError(`${where}.${set}`, 'expected a non-empty list of positive numbers');
    }
    out[set] = [...new Set([...(list as number[]), ...thresholdsInBucketSet(slos, set)])].sort((a, b) => a - b);
  }
  return out;
}
