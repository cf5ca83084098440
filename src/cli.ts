#!/usr/bin/env node
/**
 * The `infermeter` command line. Subcommands register here; each lives with its feature.
 * Exit status: 0 done (help and version included), 2 a usage or configuration error (a bad
 * flag, environment variable or config file value, commander's own errors included), 1 a
 * runtime failure (a port in use, a file that cannot be read). Always one line on stderr,
 * never a stack trace.
 */
import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { addConfigOptions, resolveConfig } from './config.js';
import { configLogFields, renderConfig } from './daemon/print-config.js';
import { ConfigError, UnreadableFileError } from './lib/errors.js';
import { createLogger } from './lib/log.js';
import { cliValues, commanderExitCode, uniformCommandLine } from './lib/cli-help.js';
import { runDaemon } from './daemon/main.js';
import { SUBCOMMANDS } from './commands.js';

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

export function buildProgram(): Command {
  const program = new Command('infermeter')
    .description('Metering reverse proxy and collectors for LLM inference servers (TTFT, TPOT, E2E, SLOs, GPU, engine)')
    .version(pkg.version);
  const serve = addConfigOptions(new Command('serve').description('run the metering proxy in front of an inference server (default)'));
  serve.action(async (opts: Record<string, unknown>, cmd: Command) => {
    const config = resolveConfig(cliValues(cmd));
    if (opts['printConfig'] === true) {
      process.stdout.write(renderConfig(config));
      return;
    }
    const log = createLogger(config.logLevel);
    log.info(configLogFields(config), 'effective configuration');
    await runDaemon(config, log);
  });
  program.addCommand(serve, { isDefault: true });
  for (const add of SUBCOMMANDS) program.addCommand(add());
  return uniformCommandLine(program);
}

/** Exit status and the one line for an error that stopped a command. */
export function failure(err: unknown): { code: number; line: string | null } {
  if (err instanceof CommanderError) return { code: commanderExitCode(err), line: null }; // commander printed it
  if (err instanceof UnreadableFileError) return { code: 1, line: `infermeter: ${err.message}` };
  if (err instanceof ConfigError) return { code: 2, line: `infermeter: invalid configuration: ${err.message}` };
  return { code: 1, line: `infermeter: ${(err as Error)?.message ?? String(err)}` };
}

export async function main(argv: string[]): Promise<void> {
  try {
    await buildProgram().parseAsync(argv);
  } catch (err) {
    const { code, line } = failure(err);
    if (line) process.stderr.write(`${line}\n`);
    process.exit(code);
  }
}

void main(process.argv);
