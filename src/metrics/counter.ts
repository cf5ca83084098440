/**
 * The request counters' storage on the metrics side, beside SeriesHistogram: a prom-client
 * metric (rendered exactly as its Counter) whose series are found by one string key built
 * from the label values in a fixed order, instead of prom-client's validate-sort-hash of
 * the label object on every inc(). Each request record increments six to ten of them.
 */
import type { Registry } from 'prom-client';

interface Series {
  value: number;
  labels: Record<string, string>;
}

export class SeriesCounter {
  readonly type = 'counter';
  readonly aggregator = 'sum';
  private readonly series = new Map<string, Series>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelNames: readonly string[],
    registry: Registry,
  ) {
    registry.registerMetric(this as unknown as Parameters<Registry['registerMetric']>[0]);
  }

  /** Adds `value` (default 1; 0 creates the series) to the series of these labels (every label name given). */
  inc(labels: Record<string, string>, value = 1): void {
    if (!(value >= 0) || value === Infinity) throw new RangeError(`${this.name}: a counter only goes up by a finite amount, got ${value}`);
    let key = '';
    for (const n of this.labelNames) key += labels[n] + '\u0000';
    const s = this.series.get(key);
    if (s) s.value += value;
    else this.series.set(key, { value, labels });
  }

  async get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: Series[] }> {
    return { help: this.help, name: this.name, type: this.type, values: [...this.series.values()], aggregator: this.aggregator };
  }

  reset(): void {
    this.series.clear();
  }
}
