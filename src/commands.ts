import type { Command } from 'commander';
import { rulesCommand } from './ops/rules-command.js';
import { simulateCommand } from './sim/command.js';
import { demoCommand } from './demo/command.js';
import { benchCommand } from './bench/command.js';
import { traceCommand } from './bench/trace-command.js';

/**
 * Subcommands besides the proxy, one factory per feature (simulate, demo, rules, bench, ...).
 * Each feature adds one row.
 */
export const SUBCOMMANDS: readonly (() => Command)[] = [
  rulesCommand,
  simulateCommand,
  demoCommand,
  benchCommand,
  traceCommand,
];
