/**
 * Resolution: flags, INFERMETER_* variables, the config file and the defaults into one Config,
 * by one precedence for every setting (flag > env > file > default), then the settings derived
 * from others. It reads (the config file, the bench file) but writes nothing; the checks that
 * need the whole config are check.ts's, and the one write (the tenant salt) comes last, in
 * config.ts.
 */
import { checkAddressClashes } from './clashes.js';
import { ConfigError } from '../lib/errors.js';
import { ENGINES, type EngineKind } from '../lib/engines.js';
import { readBenchLimit } from '../metrics/bottleneck/capacity.js';
import { parseSloConfig } from '../slo/config.js';
import { traceSettings } from '../lib/trace-env.js';
import { resolveUpstreams, singleUpstream, type UpstreamSpec } from '../lib/upstream-spec.js';
import { FLAG_KEYS, envName, flagName, rowOf } from './flags.js';
import { checkFileKeys, readConfigFile, resolveBuckets, type ConfigFile } from './file.js';
import type { Config, FlagKey, FlagValues, SettingSource } from './types.js';

/** Engines whose older releases reject an unknown `stream_options` field: no injection unless asked. */
const ENGINES_WITHOUT_STREAM_OPTIONS = new Set<EngineKind>(['tgi']);

interface Inputs {
  /** Only what was typed on the command line (lib/cli-help.ts cliValues). */
  cli: Record<string, unknown>;
  env: NodeJS.ProcessEnv;
  file: ConfigFile;
  configFile: string | null;
  /** false: a setting without a value and without a default is left out rather than refused (loadConfigFile). */
  requireAll: boolean;
}

export function resolveSettings(cliValues: Record<string, unknown>, env: NodeJS.ProcessEnv, requireAll: boolean): Config {
  const configFile = (cliValues['config'] as string | undefined) ?? env['INFERMETER_CONFIG'] ?? null;
  const origins: Record<string, SettingSource> = {
    configFile: cliValues['config'] !== undefined ? 'flag' : env['INFERMETER_CONFIG'] !== undefined ? 'env' : 'default',
  };
  const file = configFile ? readConfigFile(configFile) : {};
  checkFileKeys(file, configFile);
  const flags = resolveFlags({ cli: cliValues, env, file, configFile, requireAll }, origins);
  origins['slos'] = 'slos' in file ? 'file' : 'default';
  origins['buckets'] = 'buckets' in file ? 'file' : 'default';
  const list = resolveUpstreamList(flags, file, configFile);
  if (list.fromFile) origins['upstream'] = origins['upstreams'] = 'file';
  let engineMetrics = flags.engineMetrics;
  if (list.fromFile && engineMetrics === '') engineMetrics = list.upstreams[0]!.engineMetrics;
  if (engineMetrics === '' && list.upstream) engineMetrics = `${list.upstream}/metrics`;
  checkAddressClashes(flags.listen, flags.metricsListen, list.upstreams, list.fromFile ? `--config ${configFile}: upstreams` : '--upstream');
  const bottleneckBenchLimit = readBenchLimit(flags.bottleneckBench);
  const slos = parseSloConfig(file['slos'], `--config ${configFile}: slos`);
  const buckets = resolveBuckets(file['buckets'], slos, `--config ${configFile}: buckets`);
  return {
    ...flags,
    upstream: list.upstream,
    upstreams: list.upstreams,
    engineMetrics,
    tenantFrom: flags.tenantFrom === '' ? (flags.tenantHeader === '' ? 'none' : 'header') : flags.tenantFrom,
    injectUsage: flags.injectUsage === 'auto' ? !ENGINES_WITHOUT_STREAM_OPTIONS.has(flags.engine) : flags.injectUsage,
    bottleneckBenchLimit,
    slos,
    buckets,
    tracing: traceSettings(env),
    configFile,
    sources: { cli: plainValues(cliValues), env: infermeterEnv(env) },
    origins,
  };
}

/** Every row of the flag table parsed from its source; `upstream`, the one row without a default, is '' when none gave it. */
function resolveFlags(input: Inputs, origins: Record<string, SettingSource>): FlagValues {
  const values: Partial<FlagValues> = {};
  for (const key of FLAG_KEYS) resolveRow(key, input, origins, values);
  values.upstream ??= '';
  if (!complete(values)) throw new Error('the flag table left a setting without a value'); // every other row has a default
  return values;
}

function complete(values: Partial<FlagValues>): values is FlagValues {
  return FLAG_KEYS.every((key) => values[key] !== undefined);
}

/** One row: the first source that gives it a value, parsed by the row's own parser (typed by its key). */
function resolveRow<K extends FlagKey>(key: K, input: Inputs, origins: Record<string, SettingSource>, out: Partial<FlagValues>): void {
  const row = rowOf(key);
  const flag = flagName(row);
  const env = envName(row);
  let raw: unknown = input.cli[key];
  let where = flag;
  origins[key] = 'flag';
  if (typeof raw === 'boolean') raw = String(raw); // a switch given on the command line
  if (raw === undefined && input.env[env] !== undefined) {
    raw = input.env[env];
    where = `${flag} (env ${env})`;
    origins[key] = 'env';
  }
  if (raw === undefined && key in input.file) {
    raw = input.file[key];
    where = `${flag} (config key ${key} in ${input.configFile})`;
    origins[key] = 'file';
    if (typeof raw !== 'string' && typeof raw !== 'number' && typeof raw !== 'boolean' && !Array.isArray(raw)) {
      throw new ConfigError(where, `expected a scalar value, got ${JSON.stringify(raw)}`);
    }
    if (Array.isArray(raw)) raw = raw.join(',');
  }
  if (raw === undefined) {
    raw = row.default;
    origins[key] = 'default';
  }
  if (raw === undefined && (!input.requireAll || (key === 'upstream' && input.file['upstreams'] !== undefined))) return;
  if (raw === undefined) throw new ConfigError(flag, `is required (${row.help}); also settable as ${env}`);
  try {
    out[key] = row.parse(String(raw));
  } catch (err) {
    throw new ConfigError(where, (err as Error).message, { cause: err });
  }
}

/**
 * `upstreams:` from the file, or the list of one from --upstream. With both, the list wins
 * only if --upstream came from neither flag nor environment (a flag always wins).
 */
function resolveUpstreamList(flags: FlagValues, file: ConfigFile, configFile: string | null): { upstream: string; upstreams: UpstreamSpec[]; fromFile: boolean } {
  const defaults = {
    engine: flags.engine, engineMetrics: flags.engineMetrics, connections: flags.upstreamConnections, connectTimeout: flags.connectTimeout,
    headersTimeout: flags.headersTimeout, idleTimeout: flags.idleTimeout, upstreamCa: flags.upstreamCa, upstreamCert: flags.upstreamCert,
    upstreamKey: flags.upstreamKey, upstreamInsecureSkipVerify: flags.upstreamInsecureSkipVerify, engines: ENGINES,
  };
  if (file['upstreams'] !== undefined && file['upstream'] !== undefined) {
    throw new ConfigError(`--config ${configFile}: upstreams`, 'give either upstream or upstreams, not both');
  }
  if (file['upstreams'] !== undefined && flags.upstream === '') {
    const upstreams = resolveUpstreams(file['upstreams'], defaults, `--config ${configFile}: upstreams`);
    return { upstream: upstreams[0]!.url, upstreams, fromFile: true };
  }
  return { upstream: flags.upstream, upstreams: flags.upstream ? singleUpstream(flags.upstream, defaults) : [], fromFile: false };
}

function plainValues(values: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(values)) if (v !== undefined && (typeof v !== 'object' || v === null)) out[k] = v;
  return out;
}

function infermeterEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (k.startsWith('INFERMETER_') && v !== undefined) out[k] = v;
  return out;
}
