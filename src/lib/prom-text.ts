/**
 * A small pure parser for the Prometheus text exposition format (0.0.4), as engines serve
 * it: `# HELP`/`# TYPE` lines, samples with optional labels, optional timestamps, escaped
 * label values, NaN/+Inf. No npm package fits (the one that exists is unmaintained since
 * 2018), so this one is small and tested on every captured scrape.
 * Lines that are not valid are skipped and counted, never fatal.
 */

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
  /** Milliseconds since the epoch, when the line carries one (rare: engines omit it). */
  timestamp?: number;
}

export interface ParsedScrape {
  samples: Sample[];
  /** family name → TYPE (counter, gauge, histogram, summary, untyped). */
  types: Map<string, string>;
  invalidLines: number;
}

const TYPE_LINE = /^#\s*TYPE\s+(\S+)\s+(\S+)/;
const TIMESTAMP = /^-?\d+$/;

export function parsePrometheusText(text: string): ParsedScrape {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  let invalidLines = 0;
  let start = 0;
  const len = text.length;
  while (start < len) {
    let end = text.indexOf('\n', start);
    if (end === -1) end = len;
    const line = text.slice(start, end).trim();
    start = end + 1;
    if (line === '') continue;
    if (line.charCodeAt(0) === 35 /* # */) {
      const m = TYPE_LINE.exec(line);
      if (m) types.set(m[1]!, m[2]!);
      continue;
    }
    const s = parseSampleLine(line);
    if (s) samples.push(s);
    else invalidLines++;
  }
  return { samples, types, invalidLines };
}

/** One sample line (already trimmed), or null when it is not valid exposition text. */
export function parseSampleLine(line: string): Sample | null {
  const nameEnd = scanName(line, 0, true);
  if (nameEnd === 0) return null;
  const name = line.slice(0, nameEnd);
  let i = nameEnd;
  const labels: Record<string, string> = {};
  if (line.charCodeAt(i) === 123 /* { */) {
    i = parseLabels(line, i + 1, labels);
    if (i < 0) return null;
  }
  // value, then an optional integer timestamp (ms), separated by blanks
  while (isBlank(line.charCodeAt(i))) i++;
  const valueEnd = scanToBlank(line, i);
  if (valueEnd === i) return null;
  const value = parseValue(line.slice(i, valueEnd));
  if (value === null) return null;
  i = valueEnd;
  while (isBlank(line.charCodeAt(i))) i++;
  // An OpenMetrics exemplar (` # {trace_id="…"} 0.5`) follows the value: not ours to read.
  if (i === line.length || line.charCodeAt(i) === 35 /* # */) return { name, labels, value };
  const tsEnd = scanToBlank(line, i);
  const ts = line.slice(i, tsEnd);
  if (tsEnd !== line.length || !TIMESTAMP.test(ts)) return null;
  return { name, labels, value, timestamp: Number(ts) };
}

function isBlank(c: number): boolean {
  return c === 32 || c === 9;
}

function scanToBlank(s: string, i: number): number {
  while (i < s.length && !isBlank(s.charCodeAt(i))) i++;
  return i;
}

/** Parses `a="x",b="y"}` from `i`; returns the index after `}` or -1. */
function parseLabels(line: string, i: number, labels: Record<string, string>): number {
  for (;;) {
    while (line[i] === ' ' || line[i] === ',') i++;
    if (line[i] === '}') return i + 1;
    const end = scanName(line, i, false);
    if (end === i) return -1;
    const label = line.slice(i, end);
    i = end;
    while (line[i] === ' ') i++;
    if (line[i] !== '=') return -1;
    i++;
    while (line[i] === ' ') i++;
    if (line[i] !== '"') return -1;
    i++;
    const close = line.indexOf('"', i);
    if (close === -1) return -1;
    const slash = line.indexOf('\\', i);
    if (slash === -1 || slash > close) {
      labels[label] = line.slice(i, close); // fast path: no escapes
      i = close + 1;
      continue;
    }
    let value = '';
    for (;;) {
      const c = line[i];
      if (c === undefined) return -1;
      if (c === '"') break;
      if (c === '\\') {
        const n = line[i + 1];
        if (n === undefined) return -1;
        value += n === 'n' ? '\n' : n; // \\ → \, \" → ", \n → newline
        i += 2;
        continue;
      }
      value += c;
      i++;
    }
    labels[label] = value;
    i++;
  }
}

/** End of a metric name (colons allowed) or label name starting at `i`; `i` when none. */
function scanName(s: string, i: number, colon: boolean): number {
  const start = i;
  for (; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const letter = (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c === 95 || (colon && c === 58);
    if (letter || (i > start && c >= 48 && c <= 57)) continue;
    break;
  }
  return i;
}

function parseValue(text: string): number | null {
  switch (text.toLowerCase()) {
    case 'nan':
      return NaN;
    case '+inf':
    case 'inf':
      return Infinity;
    case '-inf':
      return -Infinity;
  }
  const v = Number(text); // the slice has no blanks, so '' never reaches here
  return Number.isNaN(v) ? null : v;
}

/** Sum of the samples of `name` whose labels include `match` (test and collector convenience). */
export function sumSamples(samples: readonly Sample[], name: string, match: Record<string, string> = {}): number {
  let total = 0;
  for (const s of samples) {
    if (s.name !== name) continue;
    let ok = true;
    for (const k in match) if (s.labels[k] !== match[k]) ok = false;
    if (ok) total += s.value;
  }
  return total;
}
