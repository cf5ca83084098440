/**
 * One scrape's normalized families (normalize.ts) as the machine snapshot's engine reading:
 * the same numbers the `infermeter_engine_*` series show, by field (fields.ts). Pure.
 */
import { ENGINE_FIELDS, ENGINE_HISTOGRAM_FIELDS, type EngineField, type EngineHistogramField } from './fields.js';
import type { FamilyValue, Snapshot } from './normalize.js';
import type { EngineCacheConfig } from './cache-config.js';
import { finite, type EngineReading, type HistogramReading } from '../snapshot.js';

const SCALARS = Object.entries(ENGINE_FIELDS) as [EngineField, (typeof ENGINE_FIELDS)[EngineField]][];
const HISTOGRAMS = Object.entries(ENGINE_HISTOGRAM_FIELDS) as [EngineHistogramField, (typeof ENGINE_HISTOGRAM_FIELDS)[EngineHistogramField]][];

export function engineReading(families: Snapshot, upstream: string, engine: string, at: number, cacheConfig: EngineCacheConfig | null = null): Omit<EngineReading, 'gpus'> {
  const values = {} as Record<EngineField, number | null>;
  for (const [field, metric] of SCALARS) values[field] = finite(families.get(metric)?.[0]?.value);
  const histograms = {} as Record<EngineHistogramField, HistogramReading | null>;
  for (const [field, metric] of HISTOGRAMS) histograms[field] = histogram(families.get(metric), metric);
  return { upstream, engine, ...values, histograms, cacheConfig, at };
}

/** A normalized histogram family (its `_bucket`, `_sum` and `_count` lines) as one reading; absent: null. */
function histogram(values: readonly FamilyValue[] | undefined, name: string): HistogramReading | null {
  if (!values || values.length === 0) return null;
  let sum: number | null = null;
  let count: number | null = null;
  const buckets: { le: number; count: number }[] = [];
  for (const v of values) {
    if (v.metricName === `${name}_sum`) sum = finite(v.value);
    else if (v.metricName === `${name}_count`) count = finite(v.value);
    else if (v.metricName === `${name}_bucket`) buckets.push({ le: v.labels['le'] === '+Inf' ? Infinity : Number(v.labels['le']), count: v.value });
  }
  return { sum, count, buckets };
}
