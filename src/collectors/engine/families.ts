/**
 * A prom-client metric whose samples are set wholesale from a snapshot. prom-client's
 * Counter cannot be set and its Histogram cannot take bucket counts, yet engine counters
 * and histograms must be re-exported with their own values and buckets, typed counter and
 * histogram so rate() and histogram_quantile() work. Registered like any metric, so the
 * registry renders it (HELP, TYPE, escaping) with everything else.
 */
import type { Metric, Registry } from 'prom-client';
import type { MetricDef } from '../../lib/metric-def.js';
import type { FamilyValue } from './normalize.js';

/**
 * One family holds the samples of every upstream's collector (several engines behind one
 * daemon), each set and cleared by its own source key; rendering concatenates them.
 */
export class SnapshotFamily {
  readonly name: string;
  readonly help: string;
  readonly type: MetricDef['type'];
  readonly aggregator = 'sum' as const;
  private readonly bySource = new Map<string, FamilyValue[]>();
  private values: FamilyValue[] = [];

  constructor(def: MetricDef, registry: Registry) {
    this.name = def.name;
    this.help = def.help;
    this.type = def.type;
    registry.registerMetric(this as unknown as Metric);
  }

  /** Replaces every sample of `source`; an empty list removes its series. */
  set(values: FamilyValue[], source = ''): void {
    this.bySource.set(source, values);
    this.values = this.bySource.size === 1 ? values : [...this.bySource.values()].flat();
  }

  clear(source?: string): void {
    if (source === undefined) this.bySource.clear();
    else this.bySource.delete(source);
    this.values = [...this.bySource.values()].flat();
  }

  get size(): number {
    return this.values.length;
  }

  /** prom-client's registry calls this to render and for getMetricsAsJSON(). */
  get(): { name: string; help: string; type: string; aggregator: string; values: FamilyValue[] } {
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values: this.values };
  }

  /** Registry.resetMetrics() calls this. */
  reset(): void {
    this.clear();
  }
}

const shared = new WeakMap<Registry, Map<string, SnapshotFamily>>();

/** The registry's family of `def`, made on first use: every upstream's collector writes into the same one. */
export function sharedFamily(def: MetricDef, registry: Registry): SnapshotFamily {
  let byName = shared.get(registry);
  if (!byName) shared.set(registry, (byName = new Map()));
  let f = byName.get(def.name);
  if (!f) byName.set(def.name, (f = new SnapshotFamily(def, registry)));
  return f;
}
