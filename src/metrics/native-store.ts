/**
 * The native histogram series of one registry, by metric name and label set. RequestMetrics
 * creates them beside its prom-client histograms (one observation feeds both); the protobuf
 * exposition reads them back by the same label set. Attached to the registry rather than
 * passed around, so that whoever serves a registry finds its native series.
 */
import type { Registry } from 'prom-client';
import { NativeSeries, type NativeOptions } from './native.js';

type Labels = Readonly<Partial<Record<string, string | number>>>;

export class NativeHistograms {
  private readonly families = new Map<string, Map<string, NativeSeries>>();

  constructor(readonly options: NativeOptions) {}

  /** The series for (name, labels), created on first use. Callers keep it: lookups hash. */
  series(name: string, labels: Labels): NativeSeries {
    let family = this.families.get(name);
    if (!family) this.families.set(name, (family = new Map()));
    const key = labelKey(labels);
    let s = family.get(key);
    if (!s) family.set(key, (s = new NativeSeries(this.options)));
    return s;
  }

  /** The series of `name` with exactly these labels (`le` ignored), if any. */
  lookup(name: string, labels: Labels): NativeSeries | undefined {
    return this.families.get(name)?.get(labelKey(labels));
  }

  has(name: string): boolean {
    return this.families.has(name);
  }
}

/** Order-independent key of a label set, `le` left out (classic bucket samples carry it). */
export function labelKey(labels: Labels): string {
  const names = Object.keys(labels).filter((n) => n !== 'le').sort();
  let key = '';
  for (const n of names) key += `${n}\u0000${labels[n]}\u0001`;
  return key;
}

const BY_REGISTRY = new WeakMap<Registry, NativeHistograms>();

export function attachNativeHistograms(registry: Registry, natives: NativeHistograms): void {
  BY_REGISTRY.set(registry, natives);
}

export function nativeHistogramsOf(registry: Registry): NativeHistograms | undefined {
  return BY_REGISTRY.get(registry);
}
