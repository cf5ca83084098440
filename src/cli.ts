#!/usr/bin/env node
/** The `infermeter` command line. Subcommands register here; each lives with its feature. */
import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { addConfigOptions, resolveConfig } from './config.js';
import { ConfigError } from './lib/errors.js';
import { createLogger } from './lib/log.js';
import { runDaemon } from './daemon/main.js';
import { SUBCOMMANDS } from './commands.js';

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

export function buildProgram(): Command {
  const program = new Command('infermeter')
    .description('Metering reverse proxy and collectors for LLM inference servers (TTFT, TPOT, E2E, SLOs, GPU, engine)')
    .version(pkg.version)
    .showHelpAfterError();
  const serve = addConfigOptions(new Command('serve').description('run the metering proxy in front of an inference server (default)'));
  serve.action(async (opts: Record<string, unknown>) => {
    const config = resolveConfig(opts);
    await runDaemon(config, createLogger(config.logLevel));
  });
  program.addCommand(serve, { isDefault: true });
  for (const add of SUBCOMMANDS) program.addCommand(add());
  return program;
}

export async function main(argv: string[]): Promise<void> {
  try {
    await buildProgram().parseAsync(argv);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`infermeter: invalid configuration: ${err.message}\n`);
      process.exit(2);
    }
    process.stderr.write(`infermeter: ${(err as Error).message}\n`);
    process.exit(1);
  }
}

void main(process.argv);
