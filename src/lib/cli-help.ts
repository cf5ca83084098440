/**
 * One look and one exit contract for every subcommand's command line (commander):
 * - help: every option reads `description (required, default: "x", env: NAME)`, required ones
 *   marked whether commander enforces them (`rules --config`) or the config does (`--upstream`,
 *   which may come from env or file too);
 * - errors: commander's own (unknown option, missing value, bad choice) print one line
 *   `infermeter: …` and throw, so the caller exits 2 like any other usage error;
 * - values: only what was typed on the command line, never commander's pre-filled defaults
 *   (a `--no-x` option is pre-filled true, which would beat the environment and the file).
 */
import type { Command, Option } from 'commander';

const REQUIRED = new WeakSet<Option>();

/** Marks an option required in help without commander enforcing it (the config layer does). */
export function markRequired<T extends Option>(option: T): T {
  REQUIRED.add(option);
  return option;
}

function describeOption(option: Option): string {
  const extra: string[] = [];
  if (option.mandatory || REQUIRED.has(option)) extra.push('required');
  if (option.argChoices) extra.push(`choices: ${option.argChoices.map((c) => JSON.stringify(c)).join(', ')}`);
  const showDefault = option.defaultValue !== undefined && (option.required || option.optional || typeof option.defaultValue === 'boolean');
  if (showDefault) extra.push(`default: ${option.defaultValueDescription ?? JSON.stringify(option.defaultValue)}`);
  if (option.envVar !== undefined) extra.push(`env: ${option.envVar}`);
  return extra.length > 0 ? `${option.description} (${extra.join(', ')})` : option.description;
}

/** Applies the help format and the error contract to a command and every command below it. */
export function uniformCommandLine(cmd: Command): Command {
  cmd.configureHelp({ optionDescription: (o) => describeOption(o), sortOptions: false });
  cmd.exitOverride();
  cmd.configureOutput({
    outputError: (text, write) => write(`infermeter: ${text.replace(/^error: /, '').trimEnd().replace(/\n/g, ' ')}\n`),
  });
  for (const sub of cmd.commands) uniformCommandLine(sub);
  return cmd;
}

/** The option values given on the command line itself (not defaults, not commander's env). */
export function cliValues(cmd: Command): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(cmd.opts())) {
    if (cmd.getOptionValueSource(key) === 'cli') out[key] = value;
  }
  return out;
}

/** Exit status for a commander error: 0 for help and version, 2 for every usage error. */
export function commanderExitCode(err: { exitCode: number; code: string }): number {
  return err.exitCode === 0 || err.code === 'commander.helpDisplayed' || err.code === 'commander.version' ? 0 : 2;
}
