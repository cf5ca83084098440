/**
 * What to ask this driver's dmon for, read from its `nvidia-smi dmon -h`: every `-s` column
 * group the help lists (the `x - Name` lines under `-s`), and, where `--gpm-metrics` is
 * listed, every GPM id it lists (the project's own help parser), else the ids the collector
 * asks for by default. Prints shell assignments for scripts/device/run.sh:
 *   node dist/scripts/device/plan.js <dmon -h output file>
 */
import { readFileSync } from 'node:fs';
import { gpmIdsFor, parseDmonHelp } from '../../src/collectors/gpu/plan.js';

/** Every dmon groups the fixtures show; used when the help lists none in the form read here. */
export const FALLBACK_GROUPS = 'pucvmet';

/** The `-s` letters the help lists, in its order: lines `  p - Power Usage ...` after the `-s` option, up to the next option. */
export function helpGroups(help: string): string {
  const lines = help.split(/\r?\n/);
  const start = lines.findIndex((l) => /^\s*-s[,\s=]/.test(l));
  if (start < 0) return '';
  let out = '';
  for (const line of lines.slice(start + 1)) {
    if (/^\s*-{1,2}[A-Za-z]/.test(line)) break;
    const m = /^\s+([a-z])\s+-\s+\S/.exec(line);
    if (m && !out.includes(m[1]!)) out += m[1]!;
  }
  return out;
}

export interface CapturePlan {
  groups: string;
  /** The help listed no groups in a form read here: FALLBACK_GROUPS is asked for. */
  groupsFallback: boolean;
  gpmIds: number[];
  /** The ids the collector asks for by default: retried alone when the full list is refused. */
  gpmDefaultIds: number[];
  gpmOptions: boolean;
}

export function capturePlan(help: string): CapturePlan {
  const listed = helpGroups(help);
  const parsed = parseDmonHelp(help);
  const ids = parsed.gpmIds.size > 0 ? [...parsed.gpmIds].sort((a, b) => a - b) : gpmIdsFor(parsed);
  return { groups: listed || FALLBACK_GROUPS, groupsFallback: listed === '', gpmIds: parsed.gpmMetrics ? ids : [], gpmDefaultIds: gpmIdsFor(parsed), gpmOptions: parsed.gpmOptions };
}

if (process.argv[1]?.endsWith('plan.js')) {
  const file = process.argv[2];
  if (!file) {
    process.stderr.write('usage: plan.js <dmon -h output file>\n');
    process.exit(2);
  }
  const p = capturePlan(readFileSync(file, 'utf8'));
  // Letters and digits only: run.sh evaluates these lines.
  process.stdout.write(`DMON_GROUPS=${p.groups}\nDMON_GROUPS_FALLBACK=${p.groupsFallback ? 1 : 0}\nGPM_IDS=${p.gpmIds.join(',')}\nGPM_DEFAULT_IDS=${p.gpmDefaultIds.join(',')}\nGPM_OPTIONS=${p.gpmOptions ? 1 : 0}\n`);
}
