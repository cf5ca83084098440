/**
 * `infermeter trace stats FILE...`: what a workload trace (recorded by `--workload-trace`, or a
 * Mooncake file from elsewhere) holds: arrivals over time, lengths, the API and model mix,
 * prefix reuse. Several files are read as `bench --replay` reads them: interleaved by their
 * recorded start times.
 */
import { Command } from 'commander';
import { ConfigError } from '../lib/errors.js';
import { parseDuration } from '../lib/parse.js';
import { readTraceFile } from './replay/trace.js';
import { buildWorkload } from './replay/workload.js';
import { traceStats } from './replay/stats.js';
import { renderTraceStats } from './replay/stats-render.js';

/** Rows of the arrival table, at most: one per bucket over the trace. */
const MAX_ROWS = 10_000;

interface StatsFlags {
  bucket?: string;
  json?: boolean;
}

export function traceCommand(): Command {
  const trace = new Command('trace').description('read workload traces (recorded by --workload-trace, or Mooncake files)');
  trace
    .command('stats <files...>')
    .description('arrival rate over time, length distributions, API and model mix, and the prefix reuse an unbounded cache would see')
    .option('--bucket <duration>', 'width of the arrival-rate rows (default: about 20 rows over the trace)')
    .option('--json', 'print the figures as JSON instead of Markdown')
    .action((files: string[], f: StatsFlags) => {
      const bucketSeconds = f.bucket === undefined ? undefined : bucket(f.bucket);
      const workload = buildWorkload(files.map((p) => readTraceFile(p, 'trace stats')), 1, new Map());
      const rows = bucketSeconds === undefined ? 0 : workload.recordedSpanMs / 1000 / bucketSeconds;
      if (rows > MAX_ROWS) throw new ConfigError('--bucket', `${f.bucket} makes ${Math.ceil(rows)} rows of this ${(workload.recordedSpanMs / 1000).toFixed(0)} s trace (at most ${MAX_ROWS}): choose a wider bucket`);
      const stats = traceStats(workload, { bucketSeconds });
      process.stdout.write(f.json ? JSON.stringify(stats, null, 1) + '\n' : renderTraceStats(stats));
      for (const note of workload.notes) process.stderr.write(`trace stats: ${note}\n`);
    });
  return trace;
}

function bucket(v: string): number {
  let s: number;
  try {
    s = parseDuration(v);
  } catch (err) {
    throw new ConfigError('--bucket', (err as Error).message, { cause: err });
  }
  if (!(s > 0)) throw new ConfigError('--bucket', 'must be greater than 0');
  return s;
}
