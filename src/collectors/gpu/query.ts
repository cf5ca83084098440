/**
 * Pure parsers for `nvidia-smi --query-gpu=<fields> --format=csv[,noheader][,nounits]`.
 * The CSV is unquoted, cells separated by ", ". With a header, each name may carry its unit
 * in brackets ("memory.total [MiB]"); with units, values carry them ("23028 MiB", "0 %").
 * "[N/A]", "N/A", "[Not Supported]" and friends mean no value.
 */
import { MIB, QUERY_FIELDS } from './columns.js';

const NO_VALUE = new Set(['', 'N/A', '[N/A]', 'Not Supported', '[Not Supported]', '[Unknown Error]', '[Insufficient Permissions]', '[GPU is lost]', '[Requested functionality has been deprecated]']);

export interface QueryTable {
  /** Field names, from the header when present, else the fields asked for. */
  fields: string[];
  /** Units from the header (`[MiB]`), null where none. */
  units: (string | null)[];
  rows: (string | null)[][];
  invalidLines: number;
  /** nvidia-smi's own complaint (e.g. an invalid field), when the output is one. */
  error: string | null;
}

/**
 * @param asked the fields passed to --query-gpu, in order; used to recognise a header line
 *   and to name columns when `noheader` was given.
 */
export function parseQueryCsv(text: string, asked: readonly string[]): QueryTable {
  const lines = text.split(/\r?\n/).filter((l) => l.trim() !== '');
  const table: QueryTable = { fields: [...asked], units: asked.map(() => null), rows: [], invalidLines: 0, error: null };
  const complaint = lines.find((l) => /is not a valid field to query|^Invalid combination|^NVIDIA-SMI has failed|^No devices were found/i.test(l));
  if (complaint) {
    table.error = complaint.trim();
    return table;
  }
  let first = 0;
  if (lines.length > 0 && isHeader(lines[0]!, asked)) {
    const cells = splitCells(lines[0]!);
    table.fields = cells.map((c) => c.replace(/\s*\[[^\]]*\]$/, ''));
    table.units = cells.map((c) => /\[([^\]]*)\]$/.exec(c)?.[1] ?? null);
    first = 1;
  }
  for (const line of lines.slice(first)) {
    const cells = splitCells(line);
    if (cells.length !== table.fields.length) {
      table.invalidLines++;
      continue;
    }
    table.rows.push(cells.map(queryValue));
  }
  return table;
}

function splitCells(line: string): string[] {
  return line.split(',').map((c) => c.trim());
}

function isHeader(line: string, asked: readonly string[]): boolean {
  const names = splitCells(line).map((c) => c.replace(/\s*\[[^\]]*\]$/, ''));
  return names.length === asked.length && names.every((n, i) => n === asked[i]);
}

/** One cell: null when nvidia-smi printed "no value", else the trimmed text. */
export function queryValue(cell: string): string | null {
  const v = cell.trim();
  return NO_VALUE.has(v) ? null : v;
}

/** A cell as a number: strips a unit suffix ("23028 MiB", "0 %", "299.35 W"), reads hex ("0x…04"). */
export function queryNumber(cell: string | null): number | null {
  if (cell === null) return null;
  if (/^0x[0-9a-f]+$/i.test(cell)) return Number(BigInt(cell));
  const m = /^(-?\d+(?:\.\d+)?)(?:\s*[A-Za-z%/]+)?$/.exec(cell);
  return m ? Number(m[1]) : null;
}

export interface GpuFacts {
  index: number;
  uuid: string;
  name: string;
  driverVersion: string;
  pciBusId: string;
  memoryTotalBytes: number | null;
}

/** Static facts from the output of `--query-gpu=<QUERY_FIELDS> --format=csv[,...]`. */
export function parseGpuFacts(text: string): { facts: GpuFacts[]; error: string | null; invalidLines: number } {
  const table = parseQueryCsv(text, QUERY_FIELDS);
  if (table.error) return { facts: [], error: table.error, invalidLines: table.invalidLines };
  const at = (name: string) => table.fields.indexOf(name);
  const facts: GpuFacts[] = [];
  let invalid = table.invalidLines;
  for (const row of table.rows) {
    const index = queryNumber(row[at('index')] ?? null);
    if (index === null || !Number.isInteger(index)) {
      invalid++;
      continue;
    }
    const mib = queryNumber(row[at('memory.total')] ?? null);
    facts.push({
      index,
      uuid: row[at('uuid')] ?? '',
      name: row[at('name')] ?? '',
      driverVersion: row[at('driver_version')] ?? '',
      pciBusId: row[at('pci.bus_id')] ?? '',
      memoryTotalBytes: mib === null ? null : mib * MIB,
    });
  }
  return { facts, error: facts.length === 0 && invalid > 0 ? 'no readable rows' : null, invalidLines: invalid };
}
