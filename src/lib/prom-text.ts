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
}

export interface ParsedScrape {
  samples: Sample[];
  /** family name → TYPE (counter, gauge, histogram, summary, untyped). */
  types: Map<string, string>;
  invalidLines: number;
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;

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
      const m = /^#\s*TYPE\s+(\S+)\s+(\S+)/.exec(line);
      if (m) types.set(m[1]!, m[2]!);
      continue;
    }
    const s = parseSampleLine(line);
    if (s) samples.push(s);
    else invalidLines++;
  }
  return { samples, types, invalidLines };
}

export function parseSampleLine(line: string): Sample | null {
  const nm = NAME.exec(line);
  if (!nm) return null;
  const name = nm[0];
  let i = name.length;
  const labels: Record<string, string> = {};
  if (line[i] === '{') {
    i++;
    for (;;) {
      while (line[i] === ' ' || line[i] === ',') i++;
      if (line[i] === '}') {
        i++;
        break;
      }
      const ln = /^[a-zA-Z_][a-zA-Z0-9_]*/.exec(line.slice(i));
      if (!ln) return null;
      i += ln[0].length;
      while (line[i] === ' ') i++;
      if (line[i] !== '=' || line[i + 1] !== '"') return null;
      i += 2;
      let value = '';
      for (;;) {
        const c = line[i];
        if (c === undefined) return null;
        if (c === '\\') {
          const n = line[i + 1];
          value += n === 'n' ? '\n' : (n ?? '');
          i += 2;
          continue;
        }
        if (c === '"') {
          i++;
          break;
        }
        value += c;
        i++;
      }
      labels[ln[0]] = value;
    }
  }
  const rest = line.slice(i).trim().split(/\s+/);
  if (rest.length < 1 || rest.length > 2 || rest[0] === '') return null;
  const value = parseValue(rest[0]!);
  if (value === null) return null;
  return { name, labels, value };
}

function parseValue(text: string): number | null {
  switch (text) {
    case 'NaN':
      return NaN;
    case '+Inf':
    case 'Inf':
      return Infinity;
    case '-Inf':
      return -Infinity;
  }
  const v = Number(text);
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
