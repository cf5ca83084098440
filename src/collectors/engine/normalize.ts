/**
 * Pure mapping of a parsed engine scrape onto the normalized `infermeter_engine_*`
 * families, driven by the alias table (aliases.ts). No I/O, no prom-client: tested
 * table-driven on every captured scrape.
 */
import type { ParsedScrape, Sample } from '../../lib/prom-text.js';
import { ENGINE_METRICS, type AliasTable, type Candidate, type EngineMetricDef, type EngineMetricName, type LabelListCandidate, type RatioCandidate } from './aliases.js';

/** One exposition line of a normalized family, in prom-client's value shape. */
export interface FamilyValue {
  metricName?: string;
  labels: Record<string, string>;
  value: number;
}

/** Normalized families present in one scrape; a family the engine lacks is absent. */
export type Snapshot = Map<EngineMetricName, FamilyValue[]>;

type Index = Map<string, Sample[]>;

export function normalize(scrape: ParsedScrape, table: AliasTable, engine: string): Snapshot {
  const index: Index = new Map();
  for (const s of scrape.samples) {
    const list = index.get(s.name);
    if (list) list.push(s);
    else index.set(s.name, [s]);
  }
  const out: Snapshot = new Map();
  const ratios: [EngineMetricDef, readonly Candidate[]][] = [];
  for (const def of ENGINE_METRICS as readonly EngineMetricDef[]) {
    const candidates = table[def.name as EngineMetricName];
    if (!candidates) continue;
    if (candidates.some(isRatio)) {
      ratios.push([def, candidates]); // needs the counters first
      continue;
    }
    const values = def.type === 'histogram' ? histogram(index, candidates, def.name, engine) : scalar(index, candidates, def, engine);
    if (values) out.set(def.name as EngineMetricName, values);
  }
  for (const [def, candidates] of ratios) {
    const values = ratioFamily(out, index, candidates, def, engine);
    if (values) out.set(def.name as EngineMetricName, values);
  }
  return out;
}

function isRatio(c: Candidate): c is RatioCandidate {
  return typeof c === 'object' && 'ratioOf' in c;
}

function isLabelList(c: Candidate): c is LabelListCandidate {
  return typeof c === 'object' && 'labelList' in c;
}

/** Distinct names in the label of the newest series of an info metric (see LabelListCandidate). */
function labelListCount(index: Index, c: LabelListCandidate): number | null {
  const samples = index.get(c.of);
  if (!samples || samples.length === 0) return null;
  let newest = samples[0]!;
  for (const s of samples) if (s.value > newest.value) newest = s;
  const names = (newest.labels[c.labelList] ?? '').split(',').map((n) => n.trim()).filter((n) => n !== '');
  return new Set(names).size;
}

function names(c: Candidate): readonly string[] {
  return typeof c === 'string' ? [c] : (c as readonly string[]);
}

function scalar(index: Index, candidates: readonly Candidate[], def: EngineMetricDef, engine: string): FamilyValue[] | null {
  for (const c of candidates) {
    if (isRatio(c)) continue;
    if (isLabelList(c)) {
      const n = labelListCount(index, c);
      if (n !== null) return [{ labels: { engine }, value: n }];
      continue;
    }
    const sources = names(c);
    if (!sources.every((n) => index.has(n))) continue;
    let value = 0;
    for (const n of sources) value += aggregate(index.get(n)!, def.aggregate);
    return [{ labels: { engine }, value }];
  }
  return null;
}

function aggregate(samples: readonly Sample[], how: 'sum' | 'mean'): number {
  let total = 0;
  for (const s of samples) total += s.value;
  return how === 'mean' ? total / samples.length : total;
}

function ratioFamily(out: Snapshot, index: Index, candidates: readonly Candidate[], def: EngineMetricDef, engine: string): FamilyValue[] | null {
  for (const c of candidates) {
    if (!isRatio(c)) {
      const values = scalar(index, [c], def, engine);
      if (values) return values;
      continue;
    }
    const hits = out.get(c.ratioOf[0])?.[0]?.value;
    const queries = out.get(c.ratioOf[1])?.[0]?.value;
    if (hits === undefined || queries === undefined || !(queries > 0)) continue; // no queries yet: no ratio
    return [{ labels: { engine }, value: hits / queries }];
  }
  return null;
}

/** Sums the engine's histogram series per bucket bound, keeping the engine's buckets. */
function histogram(index: Index, candidates: readonly Candidate[], name: string, engine: string): FamilyValue[] | null {
  for (const c of candidates) {
    if (isRatio(c) || isLabelList(c)) continue;
    const family = names(c)[0]!;
    const buckets = index.get(`${family}_bucket`);
    if (!buckets) continue;
    const byBound = new Map<number, number>();
    for (const b of buckets) {
      const le = parseBound(b.labels['le']);
      if (le === null) continue;
      byBound.set(le, (byBound.get(le) ?? 0) + b.value);
    }
    if (byBound.size === 0) continue;
    const sum = sumOf(index.get(`${family}_sum`));
    const count = index.has(`${family}_count`) ? sumOf(index.get(`${family}_count`)) : (byBound.get(Infinity) ?? 0);
    if (!byBound.has(Infinity)) byBound.set(Infinity, count);
    const values: FamilyValue[] = [...byBound.keys()]
      .sort((a, b) => a - b)
      .map((le) => ({ metricName: `${name}_bucket`, labels: { engine, le: formatBound(le) }, value: byBound.get(le)! }));
    values.push({ metricName: `${name}_sum`, labels: { engine }, value: sum });
    values.push({ metricName: `${name}_count`, labels: { engine }, value: count });
    return values;
  }
  return null;
}

function sumOf(samples: readonly Sample[] | undefined): number {
  let total = 0;
  for (const s of samples ?? []) total += s.value;
  return total;
}

function parseBound(le: string | undefined): number | null {
  if (le === undefined) return null;
  if (le === '+Inf' || le === 'Inf') return Infinity;
  const n = Number(le);
  return le.trim() === '' || Number.isNaN(n) ? null : n;
}

function formatBound(le: number): string {
  return le === Infinity ? '+Inf' : String(le);
}
