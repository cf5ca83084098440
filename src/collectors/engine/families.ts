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

export class SnapshotFamily {
  readonly name: string;
  readonly help: string;
  readonly type: MetricDef['type'];
  readonly aggregator = 'sum' as const;
  private values: FamilyValue[] = [];

  constructor(def: MetricDef, registry: Registry) {
    this.name = def.name;
    this.help = def.help;
    this.type = def.type;
    registry.registerMetric(this as unknown as Metric);
  }

  /** Replaces every sample; an empty list removes the family's series. */
  set(values: FamilyValue[]): void {
    this.values = values;
  }

  clear(): void {
    this.values = [];
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
