/**
 * Readings for a machine snapshot built by hand (src/collectors/snapshot.ts): every field
 * null (nothing read) but those given, so a test of a reader names only what it is about.
 */
import { GPU_FIELDS, type GpuField } from '../../src/collectors/gpu/fields.js';
import { ENGINE_FIELDS, ENGINE_HISTOGRAM_FIELDS, type EngineField, type EngineHistogramField } from '../../src/collectors/engine/fields.js';
import type { EngineReading, GpuReading, HistogramReading } from '../../src/collectors/snapshot.js';

const nulls = <K extends string>(table: Record<K, string>) => Object.fromEntries(Object.keys(table).map((k) => [k, null])) as Record<K, null>;

export function gpuOf(index: number, values: Partial<Record<GpuField, number>>, more: Partial<Omit<GpuReading, 'index' | 'upstreams'>> = {}): Omit<GpuReading, 'upstreams'> {
  return { index, uuid: `GPU-${index}`, name: null, driverVersion: null, pciBusId: null, memoryTotalBytes: null, ...nulls(GPU_FIELDS), ...values, energyJoules: null, energySource: null, energySince: null, at: 0, ...more };
}

export function engineOf(
  upstream: string, values: Partial<Record<EngineField, number>>, histograms: Partial<Record<EngineHistogramField, HistogramReading>> = {}, engine = 'vllm', at = 0,
): Omit<EngineReading, 'gpus'> {
  return { upstream, engine, ...nulls(ENGINE_FIELDS), ...values, histograms: { ...nulls(ENGINE_HISTOGRAM_FIELDS), ...histograms }, cacheConfig: null, at };
}
