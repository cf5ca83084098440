/**
 * dcgm-exporter as the GPU source: its scrape, parsed and mapped through dcgm-aliases.ts
 * into the same samples and facts the nvidia-smi path produces, so the same gauges (same
 * names, `gpu` and `uuid` labels) come out and the dashboards work unchanged.
 * normalizeDcgm() is pure; the collector only fetches and publishes. A dead exporter
 * removes every GPU series and fails the collection (up=0); it never touches the proxy.
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { parsePrometheusText, type Sample } from '../../lib/prom-text.js';
import { ScrapeClient } from '../engine/scrape.js';
import { CollectorError, type Collector } from '../types.js';
import { GPM_METRIC_NAMES } from './columns.js';
import { DCGM_ALIASES, DCGM_LABELS, DCGM_MEMORY_TOTAL, DCGM_MIG_LABELS, type DcgmCandidate } from './dcgm-aliases.js';
import type { DmonSample } from './dmon.js';
import type { GpuFacts } from './query.js';
import { GpuSeries } from './series.js';
import { GpuSourceInfo } from './source-info.js';
import type { MachineSnapshot } from '../snapshot.js';

export interface DcgmSnapshot {
  samples: DmonSample[];
  facts: GpuFacts[];
  /** Some GPU has a DCGM_FI_PROF_* figure (SM occupancy, DRAM, tensor, ...). */
  profiling: boolean;
}

export function normalizeDcgm(text: string): DcgmSnapshot {
  const byGpu = new Map<number, Map<string, Sample>>();
  for (const s of parsePrometheusText(text).samples) {
    if (!s.name.startsWith('DCGM_FI_')) continue;
    if (DCGM_MIG_LABELS.some((l) => (s.labels[l] ?? '') !== '')) continue;
    const gpu = s.labels['gpu'];
    if (gpu === undefined || !/^\d+$/.test(gpu)) continue;
    let fields = byGpu.get(Number(gpu));
    if (!fields) byGpu.set(Number(gpu), (fields = new Map()));
    if (!fields.has(s.name)) fields.set(s.name, s); // pod-attributed copies of a GPU's series: the first
  }
  const out: DcgmSnapshot = { samples: [], facts: [], profiling: false };
  for (const [gpu, fields] of [...byGpu].sort((a, b) => a[0] - b[0])) {
    const values = new Map<string, number | null>();
    for (const [metric, candidates] of Object.entries(DCGM_ALIASES)) {
      const v = pick(fields, candidates);
      if (v === null) continue;
      values.set(metric, v);
      if (GPM_METRIC_NAMES.has(metric)) out.profiling = true;
    }
    out.samples.push({ gpu, values });
    const labels = fields.values().next().value!.labels;
    out.facts.push({
      index: gpu,
      uuid: labels[DCGM_LABELS.uuid] ?? '',
      name: labels[DCGM_LABELS.name] ?? '',
      driverVersion: labels[DCGM_LABELS.driverVersion] ?? '',
      pciBusId: labels[DCGM_LABELS.pciBusId] ?? '',
      memoryTotalBytes: pick(fields, DCGM_MEMORY_TOTAL),
    });
  }
  return out;
}

function pick(fields: ReadonlyMap<string, Sample>, candidates: readonly DcgmCandidate[]): number | null {
  for (const c of candidates) {
    if (!c.fields.every((name) => fields.has(name) && Number.isFinite(fields.get(name)!.value))) continue;
    let sum = 0;
    for (const name of c.fields) sum += fields.get(name)!.value;
    return sum * c.scale;
  }
  return null;
}

export class DcgmCollector implements Collector {
  readonly name = 'gpu';
  private readonly series: GpuSeries;
  private readonly sourceInfo: GpuSourceInfo;
  private readonly client: ScrapeClient | null;

  constructor(
    private readonly url: string,
    registry: Registry,
    private readonly log: Logger,
    machine?: MachineSnapshot,
  ) {
    this.series = new GpuSeries(registry, machine);
    this.sourceInfo = new GpuSourceInfo(registry, 'dcgm-exporter');
    this.client = url ? new ScrapeClient(url) : null;
  }

  async collect(signal: AbortSignal): Promise<void> {
    if (!this.client) throw new CollectorError('not_configured', '--gpu-source dcgm-exporter needs --dcgm-exporter-url (e.g. http://127.0.0.1:9400/metrics)');
    let snapshot: DcgmSnapshot;
    try {
      snapshot = normalizeDcgm(await this.client.fetch(signal));
      if (snapshot.samples.length === 0) throw new CollectorError('not_dcgm', `${this.url} serves no DCGM_FI_* series with a gpu label`);
    } catch (err) {
      this.clear(); // last good values are not current any more
      throw err;
    }
    const facts = new Map(snapshot.facts.map((f) => [f.index, f]));
    const seen = new Set<number>();
    const at = Date.now();
    for (const s of snapshot.samples) {
      this.series.publish(s, facts.get(s.gpu), at);
      seen.add(s.gpu);
    }
    for (const gpu of this.series.gpus()) if (!seen.has(gpu)) this.series.remove(gpu);
    const changed = this.sourceInfo.set(snapshot.profiling ? 'enabled' : 'unavailable', snapshot.profiling ? '' : 'no_prof_fields');
    if (changed && !snapshot.profiling) {
      this.log.info({ url: this.url }, 'dcgm-exporter serves no DCGM_FI_PROF_* fields: SM occupancy, DRAM bandwidth and tensor activity need them in its counters CSV');
    }
  }

  private clear(): void {
    for (const gpu of this.series.gpus()) this.series.remove(gpu);
  }

  async close(): Promise<void> {
    this.clear();
    await this.client?.close();
  }
}
