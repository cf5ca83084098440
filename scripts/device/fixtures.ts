/**
 * Names and provenance of what a device run captured, in the fixture format of
 * test/fixtures/: one file per nvidia-smi command (its stdout, unchanged), named for the
 * command, the GPU count, the board and the driver branch, and one SOURCES.md table row per
 * file. A dry run (the fake nvidia-smi) names its files `fake-…` and says in the row that
 * they are synthetic, so they can never pass for captures.
 */

/** One line of raw/commands.tsv: what run.sh ran, how it ended, where its output went. */
export interface CaptureRecord {
  id: string;
  rc: number;
  seconds: number;
  /** nvidia-smi's arguments (the binary is not part of the record). */
  args: string[];
}

export interface RunFacts {
  dryRun: boolean;
  date: string;
  gpuCount: number;
  gpuModel: string;
  driverVersion: string;
  cudaVersion: string | null;
  cpuModel: string;
  cpus: number;
}

export function parseCommands(tsv: string): CaptureRecord[] {
  return tsv.split('\n').filter((l) => l.trim() !== '').map((line) => {
    const [id, rc, seconds, args] = line.split('\t');
    return { id: id!, rc: Number(rc), seconds: Number(seconds), args: (args ?? '').split(' ').filter(Boolean) };
  });
}

/** "NVIDIA H100 80GB HBM3" → "h100-80gb-hbm3". */
export function modelSlug(name: string): string {
  const slug = name.toLowerCase().replace(/^nvidia\s+/, '').replace(/\bgeforce\s+/, '').replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '');
  return slug || 'unknown-gpu';
}

export function runTag(f: RunFacts): string {
  const branch = /^(\d+)/.exec(f.driverVersion)?.[1] ?? 'unknown';
  return `${f.gpuCount}gpu-${f.dryRun ? 'fake-' : ''}${modelSlug(f.gpuModel)}-r${branch}`;
}

const argValue = (args: string[], flag: string): string | null => {
  const i = args.indexOf(flag);
  return i >= 0 ? (args[i + 1] ?? null) : null;
};

/** The fixture file for one capture; null for records that are not fixtures. */
export function fixtureName(r: CaptureRecord, tag: string, allGpmIds: readonly number[]): string | null {
  const exit = r.rc === 0 ? '' : `-exit${r.rc}`;
  if (r.id === 'dmon-help') return `nvidia-smi-dmon-help-${tag}${exit}.txt`;
  if (r.id.startsWith('dmon-')) {
    const groups = argValue(r.args, '-s');
    const gpm = argValue(r.args, '--gpm-metrics');
    const ids = gpm ? gpm.split(',').map(Number) : [];
    const gpmPart = gpm ? `-gpm-metrics-${ids.length === allGpmIds.length && ids.length > 4 ? 'all-listed' : ids.join('-')}` : '';
    const opts = argValue(r.args, '-o');
    return `nvidia-smi-dmon${groups ? `-s-${groups}` : ''}${gpmPart}${opts ? `-o-${opts}` : ''}-${tag}${exit}.txt`;
  }
  if (r.id === 'q-x') return `nvidia-smi-q-x-${tag}${exit}.xml`;
  if (r.id === 'list') return `nvidia-smi-L-${tag}${exit}.txt`;
  if (r.id.startsWith('query-')) {
    const format = (argValue(r.args, '--format') ?? r.args.find((a) => a.startsWith('--format='))?.slice(9) ?? 'csv').split(',');
    const kind = format.includes('noheader') ? 'noheader-nounits' : 'header-units';
    // Ids are query-<fields>-csv / query-<fields>-plain: the same fields in both formats.
    return `nvidia-smi-query-gpu-${r.id.slice(6).replace(/-(csv|plain)$/, '')}-${kind}-${tag}${exit}.csv`;
  }
  return null;
}

/** The SOURCES.md row (nvidia-smi table: file | command / driver | source | changes). */
export function sourcesRow(file: string, r: CaptureRecord, f: RunFacts, stderrFirstLine: string): string {
  const command = `\`nvidia-smi ${r.args.join(' ')}\``;
  const board = `${f.gpuCount}× ${f.gpuModel}, driver ${f.driverVersion}${f.cudaVersion ? ` / CUDA ${f.cudaVersion}` : ''}`;
  const ended = r.rc === 0 ? '' : `; exited ${r.rc}${stderrFirstLine ? ` (stderr: ${stderrFirstLine.replace(/\|/g, '\\|').slice(0, 160)})` : ''}`;
  const source = f.dryRun
    ? `**Synthetic: infermeter's fake nvidia-smi (bin/fake-nvidia-smi), written by the dry run of scripts/device/run.sh on ${f.date}; not a capture**`
    : `captured by scripts/device/run.sh on ${f.date} (host: ${f.cpuModel}, ${f.cpus} CPUs)`;
  return `| \`${file}\` | ${command}, ${board}${ended} | ${source} | none (stdout only) |`;
}
