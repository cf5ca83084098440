/**
 * The GPU gauges, built from the catalog rows in columns.ts, and the bookkeeping that makes
 * a GPU's series disappear as a whole (instead of freezing) when it stops reporting. The
 * same sample becomes the GPU's part of the machine snapshot (../snapshot.ts), in the same
 * call: both sources (nvidia-smi dmon, dcgm-exporter) publish through here.
 */
import { Gauge, type Registry } from 'prom-client';
import { GPU_INFO_METRIC, GPU_MEMORY_TOTAL_METRIC, GPU_METRICS, GPU_SAMPLE_METRICS } from './columns.js';
import type { DmonSample } from './dmon.js';
import { GPU_FIELDS, type GpuField } from './fields.js';
import type { GpuFacts } from './query.js';
import { MachineSnapshot, finite, type GpuReading } from '../snapshot.js';

type Labels = Record<string, string>;

export class GpuSeries {
  private readonly samples = new Map<string, Gauge>();
  private readonly info: Gauge;
  private readonly memoryTotal: Gauge;
  /** gpu index → the label sets its series were last published under. */
  private readonly published = new Map<number, { key: string; labels: Labels; info: Labels | null }>();

  constructor(
    registry: Registry,
    private readonly machine = new MachineSnapshot(),
  ) {
    const gauge = (name: string) => {
      const d = GPU_METRICS.find((m) => m.name === name)!;
      return new Gauge({ name: d.name, help: d.help, labelNames: [...d.labels], registers: [registry] });
    };
    for (const d of GPU_SAMPLE_METRICS) this.samples.set(d.name, gauge(d.name));
    this.info = gauge(GPU_INFO_METRIC);
    this.memoryTotal = gauge(GPU_MEMORY_TOTAL_METRIC);
  }

  /**
   * Sets every gauge of one GPU from its latest sample, read at `at` (Unix ms); a metric with
   * no value has no series.
   */
  publish(sample: DmonSample, facts: GpuFacts | undefined, at = Date.now()): void {
    const labels: Labels = { gpu: String(sample.gpu), uuid: facts?.uuid ?? '' };
    const info = facts ? { ...labels, name: facts.name, driver_version: facts.driverVersion, pci_bus_id: facts.pciBusId } : null;
    const key = JSON.stringify(info ?? labels);
    const before = this.published.get(sample.gpu);
    if (before && before.key !== key) this.remove(sample.gpu);
    for (const [name, g] of this.samples) {
      const v = sample.values.get(name);
      if (v === undefined || v === null) g.remove(labels);
      else g.set(labels, v);
    }
    if (info) this.info.set(info, 1);
    if (facts?.memoryTotalBytes != null) this.memoryTotal.set(labels, facts.memoryTotalBytes);
    this.published.set(sample.gpu, { key, labels, info });
    this.machine.setGpu(gpuReading(sample, facts, at));
  }

  /** Removes every series of one GPU. */
  remove(gpu: number): void {
    const p = this.published.get(gpu);
    if (!p) return;
    for (const g of this.samples.values()) g.remove(p.labels);
    this.memoryTotal.remove(p.labels);
    if (p.info) this.info.remove(p.info);
    this.published.delete(gpu);
    this.machine.removeGpu(gpu);
  }

  gpus(): number[] {
    return [...this.published.keys()];
  }
}

const FIELDS = Object.entries(GPU_FIELDS) as [GpuField, string][];

/** The snapshot's reading of one GPU: the sample's values by field, and its facts. */
export function gpuReading(sample: DmonSample, facts: GpuFacts | undefined, at: number): Omit<GpuReading, 'upstreams'> {
  const values = {} as Record<GpuField, number | null>;
  for (const [field, metric] of FIELDS) values[field] = finite(sample.values.get(metric));
  return {
    index: sample.gpu, uuid: facts?.uuid ?? '', name: facts?.name ?? null, driverVersion: facts?.driverVersion ?? null, pciBusId: facts?.pciBusId ?? null,
    memoryTotalBytes: finite(facts?.memoryTotalBytes), ...values, at,
  };
}
