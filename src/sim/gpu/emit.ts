/**
 * The fake's dmon output as a stream of lines: generated from simulated GPUs, or replayed
 * from a captured file, optionally bent by a fault (hang, crash, garbage, header change).
 * A writer paces the stream: one sample round per period.
 */
import { readFileSync } from 'node:fs';
import { dmonColumns, dmonHeader, dmonRow, parsePrefix, type FakeColumn, type Prefix } from './format.js';
import type { Load, SimGpu } from './models.js';
import type { Fault } from './args.js';

export interface Line {
  text: string;
  /** A sample row (counted by fault thresholds). */
  sample: boolean;
  /** The first row of a sample round (counted by -c): the writer waits one period before it. */
  round: boolean;
}

export interface GenerateOptions {
  gpus: readonly SimGpu[];
  groups: string;
  prefix: Prefix;
  headerEvery: number;
  /** Each GPU's load now (GPUs of different engines follow different simulators). */
  load: (gpu: number) => Load;
  /** `--gpm-metrics` columns, printed after the -s groups. */
  gpm?: readonly FakeColumn[];
  /** A driver warning printed once before the first header. */
  warning?: string | null;
}

export function* generated(o: GenerateOptions): Generator<Line> {
  const cols = [...dmonColumns(o.groups), ...(o.gpm ?? [])];
  const widths = cols.map((c) => c.width ?? 6);
  const [header, units] = dmonHeader(cols, o.prefix);
  if (o.warning) yield { text: o.warning, sample: false, round: false };
  for (let round = 0; ; round++) {
    if (round % o.headerEvery === 0) {
      yield { text: header, sample: false, round: false };
      yield { text: units, sample: false, round: false };
    }
    const now = new Date();
    for (let i = 0; i < o.gpus.length; i++) {
      const g = o.gpus[i]!;
      const r = g.read(o.load(g.index));
      // GPM compares two samples: the first round has nothing to compare yet.
      const ctx = { ecc: g.model.ecc, gpm: g.model.gpm && round > 0, nvlink: g.model.nvlink };
      const values = cols.map((c) => c.value(r, ctx));
      yield { text: dmonRow(g.index, values, o.prefix, now, widths), sample: true, round: i === 0 };
    }
  }
}

/** Replays a captured dmon file line by line, each sample row one round; loops when asked. */
export function* replayed(file: string, loop: boolean): Generator<Line> {
  const lines = readFileSync(file, 'utf8').split(/\r?\n/);
  if (lines.at(-1) === '') lines.pop();
  do {
    for (const text of lines) {
      const sample = text.trim() !== '' && !text.trimStart().startsWith('#');
      yield { text, sample, round: sample };
    }
  } while (loop);
}

const GARBAGE = [
  'Failed to process sample for GPU 0: Unknown Error',
  '\u0000\u0001\u00ff\u00fe garbled',
  '    0    1',
  '# ----- nvidia-smi: Unable to determine the device handle -----',
  '    0    abc    def',
];

export interface FaultOptions {
  fault: Fault;
  after: number;
  /** The source switched to by header-change. */
  alternate: () => Generator<Line>;
}

/** Yields lines until the fault's turn, then misbehaves. Crash and hang are signalled with sentinels. */
export function* withFault(source: Generator<Line>, o: FaultOptions): Generator<Line | 'hang' | 'crash'> {
  let samples = 0;
  let garbage = 0;
  let current = source;
  let switched = false;
  for (;;) {
    const next = current.next();
    if (next.done) return;
    const line = next.value;
    if (line.sample && samples >= o.after) {
      if (o.fault === 'hang') yield 'hang';
      if (o.fault === 'crash') yield 'crash';
      if (o.fault === 'header-change' && !switched && line.round) {
        switched = true;
        current = o.alternate();
        continue;
      }
    }
    yield line;
    if (line.sample) {
      samples++;
      if (o.fault === 'garbage' && samples > o.after) yield { text: GARBAGE[garbage++ % GARBAGE.length]!, sample: false, round: false };
    }
  }
}

export interface WriteOptions {
  periodMs: number;
  count: number | null;
  write: (text: string) => void;
  onCrash: () => void;
}

export async function writeLines(lines: Generator<Line | 'hang' | 'crash'>, o: WriteOptions): Promise<void> {
  let rounds = 0;
  for (const line of lines) {
    if (line === 'hang') return new Promise<void>(() => setInterval(() => {}, 1 << 30));
    if (line === 'crash') return o.onCrash();
    // -c N: N whole rounds, then nothing more (not even the next header)
    if (o.count !== null && rounds >= o.count && (line.round || !line.sample)) return;
    if (line.round) {
      if (rounds > 0) await sleep(o.periodMs);
      rounds++;
    }
    o.write(line.text + '\n');
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export { parsePrefix };
