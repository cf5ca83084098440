import type { Command } from 'commander';

/**
 * Subcommands besides the proxy, one factory per feature (simulate, demo, rules, bench, ...).
 * Each feature adds one row.
 */
export const SUBCOMMANDS: readonly (() => Command)[] = [
];
