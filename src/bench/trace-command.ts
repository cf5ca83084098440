/**
 * `infermeter trace stats FILE...`: what a workload trace (recorded by `--workload-trace`, or a
 * Mooncake file from elsewhere) holds: arrivals over time, lengths, the API and model mix,
 * prefix reuse. Several files are read as `bench --replay` reads them: interleaved by their
 * recorded start times.
 */
import { Command } from 'commander';
import { ConfigError } from '../lib/errors.js';
import { parseDuration } from '../lib/parse.js';
import { readTraceFile, type TraceEngine, type TraceMeta } from './replay/trace.js';
import { buildWorkload } from './replay/workload.js';
import { engineSizeCache, traceStats, unboundedCache, type ReuseModel } from './replay/stats.js';
import { renderTraceStats } from './replay/stats-render.js';

/** Rows of the arrival table, at most: one per bucket over the trace. */
const MAX_ROWS = 10_000;

interface StatsFlags {
  bucket?: string;
  json?: boolean;
  cacheBlocks?: string;
  cacheBlockSize: string;
}

export function traceCommand(): Command {
  const trace = new Command('trace').description('read workload traces (recorded by --workload-trace, or Mooncake files)');
  trace
    .command('stats <files...>')
    .description('arrival rate over time, length distributions, API and model mix, and the prefix reuse an unbounded cache would see (and one of each engine\'s size: recorded in the sidecar, or --cache-blocks)')
    .option('--bucket <duration>', 'width of the arrival-rate rows (default: about 20 rows over the trace)')
    .option('--json', 'print the figures as JSON instead of Markdown')
    .option('--cache-blocks <n>', "also model a prefix cache of this many KV blocks, least recently used out (vLLM: num_gpu_blocks in vllm:cache_config_info, or 'GPU KV cache size' in its log / block size); default: each engine's own size where the trace's sidecar recorded it")
    .option('--cache-block-size <tokens>', 'tokens per block of --cache-blocks (vLLM: block_size, 16 on CUDA)', '16')
    .action((files: string[], f: StatsFlags) => {
      const bucketSeconds = f.bucket === undefined ? undefined : bucket(f.bucket);
      const cacheBlocks = f.cacheBlocks === undefined ? null : wholeNumber('--cache-blocks', f.cacheBlocks);
      const cacheBlockSize = wholeNumber('--cache-block-size', f.cacheBlockSize);
      const workload = buildWorkload(files.map((p) => readTraceFile(p, 'trace stats')), 1, new Map());
      const models: ReuseModel[] = [unboundedCache()];
      const sizes = [...new Set(workload.files.map((x) => x.meta.blockSize))];
      const traceBlockTokens = sizes[0] ?? 512;
      if (cacheBlocks !== null) {
        if (sizes.length > 1) throw new ConfigError('--cache-blocks', `the files' blocks differ in size (${sizes.join(', ')} tokens): model one block size at a time`);
        if (cacheBlocks * cacheBlockSize < traceBlockTokens) throw new ConfigError('--cache-blocks', `${cacheBlocks} blocks of ${cacheBlockSize} tokens hold less than one of the trace's ${traceBlockTokens}-token blocks`);
        models.push(engineSizeCache({ blocks: cacheBlocks, blockTokens: cacheBlockSize, traceBlockTokens }));
      } else models.push(...sidecarCaches(workload.files, sizes, workload.notes));
      const rows = bucketSeconds === undefined ? 0 : workload.recordedSpanMs / 1000 / bucketSeconds;
      if (rows > MAX_ROWS) throw new ConfigError('--bucket', `${f.bucket} makes ${Math.ceil(rows)} rows of this ${(workload.recordedSpanMs / 1000).toFixed(0)} s trace (at most ${MAX_ROWS}): choose a wider bucket`);
      const stats = traceStats(workload, { bucketSeconds, models });
      process.stdout.write(f.json ? JSON.stringify(stats, null, 1) + '\n' : renderTraceStats(stats));
      for (const note of workload.notes) process.stderr.write(`trace stats: ${note}\n`);
    });
  return trace;
}

/**
 * Without --cache-blocks: a cache of each engine's own size, as the sidecars recorded it
 * (`engines`), fed the requests that upstream served. The newest file's word wins.
 */
function sidecarCaches(files: readonly { meta: TraceMeta }[], sizes: readonly number[], notes: string[]): ReuseModel[] {
  const engines = new Map<string, TraceEngine>();
  for (const f of files) for (const [name, e] of f.meta.engines) engines.set(name, e);
  if (engines.size === 0) return [];
  if (sizes.length > 1) {
    notes.push(`the files' blocks differ in size (${sizes.join(', ')} tokens): no engine-size row (give --cache-blocks for one block size at a time)`);
    return [];
  }
  const out: ReuseModel[] = [];
  for (const [name, e] of engines) {
    const blocks = Math.floor(e.cacheTokens / e.blockSize);
    if (blocks * e.blockSize < sizes[0]!) {
      notes.push(`${name}: its cache (${e.cacheTokens} tokens) holds less than one of the trace's ${sizes[0]}-token blocks: no row`);
      continue;
    }
    out.push(engineSizeCache({ blocks, blockTokens: e.blockSize, traceBlockTokens: sizes[0]!, upstream: name, from: `${e.engine}'s size, from the sidecar` }));
  }
  return out;
}

function wholeNumber(flag: string, v: string): number {
  const n = Number(v);
  if (!/^\d+$/.test(v.trim()) || !Number.isSafeInteger(n) || n < 1) throw new ConfigError(flag, `must be a whole number ≥ 1, got ${JSON.stringify(v)}`);
  return n;
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
