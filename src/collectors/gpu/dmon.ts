/**
 * A pure, line-at-a-time parser for `nvidia-smi dmon` output. Columns are read by header
 * name, never by position: the column set differs by driver and by `-s`/`-o`, and dmon
 * prints its header (and units line) again from time to time, possibly with other columns
 * after a restart. Values go through the table in columns.ts; `-`, `N/A` and `[N/A]` mean
 * "no value" (null). Lines that fit nothing are reported as invalid, never thrown.
 */
import { DMON_KEY_COLUMNS, lookupColumn, type DmonColumn } from './columns.js';

export const NO_VALUE = new Set(['-', 'N/A', '[N/A]', 'n/a']);

export interface DmonSample {
  gpu: number;
  /** metric name → value in base units, or null when nvidia-smi printed no value. */
  values: Map<string, number | null>;
  /** The driver's cumulative energy counter in joules, where the source has one (dcgm-exporter; never dmon): energy.ts. */
  counterJoules?: number | null;
}

export type DmonEvent =
  | { kind: 'header'; columns: readonly string[] }
  | { kind: 'units' }
  | { kind: 'sample'; sample: DmonSample }
  | { kind: 'blank' }
  /** A driver notice such as the 535 series' "Only monitoring up to 4 GPUs" warning: not garbage. */
  | { kind: 'warning'; text: string }
  | { kind: 'invalid'; reason: string };

const WARNING = /^WARNING:/i;

type Slot = { key: 'gpu' } | { key: 'skip' } | { key: 'value'; column: DmonColumn };

export class DmonParser {
  private header: string[] | null = null;
  private units: string[] | null = null;
  private plan: Slot[] | null = null;
  /** Header columns (with their unit) that the table does not know, each reported once. */
  readonly unknownColumns = new Set<string>();
  private readonly onUnknown: (column: string) => void;

  constructor(onUnknown: (column: string) => void = () => {}) {
    this.onUnknown = onUnknown;
  }

  /** The current header's column names, or null before the first header. */
  get columns(): readonly string[] | null {
    return this.header;
  }

  line(raw: string): DmonEvent {
    const text = raw.trim();
    if (text === '') return { kind: 'blank' };
    if (text.charCodeAt(0) === 35 /* # */) return this.commentLine(text);
    if (WARNING.test(text)) return { kind: 'warning', text };
    return this.dataLine(text);
  }

  private commentLine(text: string): DmonEvent {
    // `^` cannot matter (mutation testing leaves `/#+/` alive): line() comes here only when the
    // text starts with '#', so the first run of '#' is the leading one.
    const tokens = text.replace(/^#+/, '').trim().split(/\s+/);
    if (tokens.includes('gpu')) {
      // pmon prints per-process rows under a `gpu pid type ...` header: not per-GPU facts.
      if (tokens.includes('pid')) {
        this.header = this.plan = this.units = null;
        return { kind: 'invalid', reason: 'pmon output (per process), not dmon' };
      }
      this.header = tokens;
      this.units = null;
      this.plan = null;
      return { kind: 'header', columns: tokens };
    }
    if (tokens.includes('Idx') && this.header) {
      if (tokens.length !== this.header.length) return { kind: 'invalid', reason: 'units line does not match the header' };
      this.units = tokens;
      this.plan = null;
      return { kind: 'units' };
    }
    return { kind: 'invalid', reason: 'comment line that is neither a header nor a units line' };
  }

  private dataLine(text: string): DmonEvent {
    if (!this.header) return { kind: 'invalid', reason: 'sample before any header' };
    const tokens = text.split(/\s+/);
    if (tokens.length !== this.header.length) return { kind: 'invalid', reason: `expected ${this.header.length} fields, got ${tokens.length}` };
    const plan = (this.plan ??= this.resolve(this.header, this.units));
    // A header is one only with a `gpu` column (commentLine), and resolve() always gives it a gpu
    // slot, so `gpu` is set or the line is invalid before the `gpu < 0` guard below: the guard
    // (and this -1) stays for a header test that might one day change; no test can reach it.
    let gpu = -1;
    const values = new Map<string, number | null>();
    for (let i = 0; i < plan.length; i++) {
      const slot = plan[i]!;
      const token = tokens[i]!;
      if (slot.key === 'skip') continue;
      if (slot.key === 'gpu') {
        if (!/^\d+$/.test(token)) return { kind: 'invalid', reason: `gpu index "${token}" is not a number` };
        gpu = Number(token);
        continue;
      }
      if (NO_VALUE.has(token)) {
        if (!values.has(slot.column.metric)) values.set(slot.column.metric, null);
        continue;
      }
      const n = Number(token);
      // Number('') is 0, hence the `''` test; no token is empty today (the line is trimmed and
      // split on runs of whitespace), so mutation testing cannot tell it from `false`.
      if (!Number.isFinite(n) || token === '') return { kind: 'invalid', reason: `${slot.column.column} value "${token}" is not a number` };
      values.set(slot.column.metric, n * slot.column.scale);
    }
    if (gpu < 0) return { kind: 'invalid', reason: 'header has no gpu column' };
    return { kind: 'sample', sample: { gpu, values } };
  }

  private resolve(header: readonly string[], units: readonly string[] | null): Slot[] {
    return header.map((name, i): Slot => {
      if (name === 'gpu') return { key: 'gpu' };
      if (DMON_KEY_COLUMNS.has(name)) return { key: 'skip' };
      const unit = units ? units[i]! : null;
      const column = lookupColumn(name, unit);
      // dataLine() reads every slot that is neither 'skip' nor 'gpu' as a value, so the key's
      // literal is not observable (a mutant of it survives).
      if (column) return { key: 'value', column };
      const label = unit === null ? name : `${name} [${unit}]`;
      if (!this.unknownColumns.has(label)) {
        this.unknownColumns.add(label);
        this.onUnknown(label);
      }
      return { key: 'skip' };
    });
  }
}

export interface ParsedDmon {
  samples: DmonSample[];
  headers: number;
  invalidLines: number;
  invalidReasons: string[];
  unknownColumns: string[];
  warnings: string[];
}

/** Parses a whole captured dmon text (tests, replay checks). */
export function parseDmonText(text: string): ParsedDmon {
  const parser = new DmonParser();
  // unknownColumns' [] is a placeholder: it is replaced from the parser after the loop.
  const out: ParsedDmon = { samples: [], headers: 0, invalidLines: 0, invalidReasons: [], unknownColumns: [], warnings: [] };
  for (const line of text.split(/\r?\n/)) {
    const ev = parser.line(line);
    if (ev.kind === 'sample') out.samples.push(ev.sample);
    else if (ev.kind === 'header') out.headers++;
    else if (ev.kind === 'warning') out.warnings.push(ev.text);
    else if (ev.kind === 'invalid') {
      out.invalidLines++;
      out.invalidReasons.push(ev.reason);
    }
  }
  out.unknownColumns = [...parser.unknownColumns];
  return out;
}
