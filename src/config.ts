/**
 * One typed schema for flags, environment variables and the config file, in three steps:
 * resolution (config/resolve.ts: flag > environment > config file > default, then the derived
 * settings), validation (config/check.ts), and the one side effect: the salts kept in
 * --state-dir (lib/state.ts: the tenant salt, the prompt-hash salt). A bad value stops startup
 * with the flag's name and what was expected. Config extends the options type of every room (config/types.ts); nothing below
 * this room imports it (docs/architecture.md).
 */
import { Command, Option } from 'commander';
import { randomBytes } from 'node:crypto';
import { keptPromptSalt, keptTenantSalt } from './lib/state.js';
import { markRequired } from './lib/cli-help.js';
import { OPTIONS, envName, isSwitch } from './config/flags.js';
import { resolveSettings } from './config/resolve.js';
import { checkConfig } from './config/check.js';
import type { Config } from './config/types.js';

export type { Config, ConfigSources, SettingSource } from './config/types.js';
export { OPTIONS, envName, flagName, type OptionSpec } from './config/flags.js';

/**
 * Adds every option to a commander command (used for the proxy command). Defaults and
 * environment variables are declared for help only: the values resolveConfig takes from
 * commander are those typed on the command line (lib/cli-help.ts cliValues), and it reads the
 * environment and the file itself, so one order holds for every setting.
 */
export function addConfigOptions(cmd: Command): Command {
  cmd.addOption(new Option('--config <file>', 'YAML config file (keys as in the flag table, plus slos, buckets and upstreams)').env('INFERMETER_CONFIG'));
  cmd.addOption(new Option('--print-config', 'print the effective configuration, each value with its source (flag, env, file, default; secrets redacted), and exit'));
  for (const spec of OPTIONS) {
    const opt = new Option(spec.flag, spec.help).env(envName(spec));
    // The key, not commander's camelCase of the flag (`--web.enable-lifecycle` would be `web.enableLifecycle`).
    opt.attributeName = () => spec.key;
    if (isSwitch(spec)) opt.default(spec.default === 'true');
    else if (spec.default !== undefined && spec.default !== '') opt.default(spec.default);
    if (spec.default === undefined) markRequired(opt);
    cmd.addOption(opt);
  }
  return cmd;
}

/**
 * Resolves the final config from commander's parsed values, the environment and the
 * config file. `cliValues` holds only what was given on the command line.
 */
export function resolveConfig(cliValues: Record<string, unknown>, env: NodeJS.ProcessEnv = process.env, opts: { requireAll?: boolean } = {}): Config {
  const cfg = resolveSettings(cliValues, env, opts.requireAll !== false);
  checkConfig(cfg);
  return keepPromptSalt(keepTenantSalt(cfg));
}

/**
 * The one step that writes, once the config is known to be valid: with --tenant-from api-key
 * and no --tenant-salt, the salt made on first start and kept in --state-dir.
 */
function keepTenantSalt(cfg: Config): Config {
  if (cfg.tenantFrom !== 'api-key' || cfg.tenantSalt !== '') return cfg;
  return { ...cfg, tenantSalt: keptTenantSalt(cfg.stateDir, cfg.configFile) };
}

/** One per process, so that a reload resolves the same salt (and names no restart-only change). */
const PROCESS_SALT = randomBytes(16).toString('hex');

/**
 * Likewise the prompt-hash salt, when the workload trace is on and no --prompt-hash-salt was
 * given. The prefix-cache model alone keeps its ids in memory: a salt of this process serves.
 */
function keepPromptSalt(cfg: Config): Config {
  if (cfg.promptHashSalt !== '') return cfg;
  if (cfg.workloadTrace === '') return cfg.prefixCache ? { ...cfg, promptHashSalt: PROCESS_SALT } : cfg;
  return { ...cfg, promptHashSalt: keptPromptSalt(cfg.stateDir, cfg.configFile, cfg.workloadTrace) };
}

/**
 * Reads and validates a config file with exactly the schema `serve` uses (every key, every
 * value), for subcommands that need only part of it (rules: slos; demo; bench). Flags and the
 * environment play no part: the file alone must be valid.
 */
export function loadConfigFile(path: string): Config {
  return resolveConfig({ config: path }, {}, { requireAll: false });
}
