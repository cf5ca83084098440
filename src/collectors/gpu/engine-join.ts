/**
 * The GPU-to-engine collector: publishes `infermeter_gpu_engine_info{gpu, uuid, upstream} 1`
 * (attribution.ts decides the rows), and the same rows as the machine snapshot's join. Its
 * I/O is two nvidia-smi queries (GPU ids; compute apps, only when some local upstream has no
 * gpus:) and one read of /proc. Runs when there is something to tie: several upstreams, or
 * any gpus: setting.
 */
import { Gauge } from 'prom-client';
import { runCommand } from '../../lib/spawn.js';
import { readProcTable, processTreeOnPort } from '../../lib/proc-ports.js';
import { localPort, type UpstreamSpec } from '../../lib/upstream-spec.js';
import { CollectorError, type Collector, type CollectorContext, type CollectorEntry } from '../types.js';
import { GPU_ENGINE_INFO_METRIC, GPU_METRICS } from './columns.js';
import { joinRows, parseComputeApps, unmatchedGpus, type AttributionTarget, type GpuId } from './attribution.js';
import { parseQueryCsv, queryNumber } from './query.js';
import { MachineSnapshot } from '../snapshot.js';

const QUERY_TIMEOUT_MS = 10_000;

export interface EngineJoinOptions {
  binary: string;
  upstreams: readonly UpstreamSpec[];
  /** /proc, or a copy of it (tests). */
  procRoot?: string;
}

export class GpuEngineJoinCollector implements Collector {
  readonly name = 'gpu_engine';
  private readonly gauge: Gauge;
  private readonly machine: MachineSnapshot;
  private warned = false;

  constructor(
    private readonly ctx: CollectorContext,
    private readonly options: EngineJoinOptions,
  ) {
    const d = GPU_METRICS.find((m) => m.name === GPU_ENGINE_INFO_METRIC)!;
    this.gauge = new Gauge({ name: d.name, help: d.help, labelNames: [...d.labels], registers: [ctx.registry] });
    this.machine = ctx.machine ?? new MachineSnapshot();
  }

  async collect(): Promise<void> {
    const gpus = await this.gpuIds();
    const auto = this.options.upstreams.filter((u) => u.gpus.length === 0 && localPort(u.url) !== null);
    let apps: ReturnType<typeof parseComputeApps> = [];
    let proc: Awaited<ReturnType<typeof readProcTable>> | null = null;
    if (auto.length > 0) {
      const r = await runCommand(this.options.binary, ['--query-compute-apps=pid,gpu_uuid', '--format=csv,noheader,nounits'], QUERY_TIMEOUT_MS);
      if (r.code !== 0) throw new CollectorError('query_failed', `nvidia-smi --query-compute-apps exited ${r.code ?? r.signal ?? r.error}`);
      apps = parseComputeApps(r.stdout);
      proc = await readProcTable(this.options.procRoot);
    }
    const targets: AttributionTarget[] = this.options.upstreams.map((u) => {
      const port = u.gpus.length === 0 ? localPort(u.url) : null;
      return { name: u.name, gpus: u.gpus, tree: port !== null && proc ? processTreeOnPort(port, proc.listening, proc.procs) : null };
    });
    const unmatched = unmatchedGpus(targets, gpus);
    if (unmatched.length > 0 && !this.warned) {
      this.warned = true;
      this.ctx.log.warn({ unmatched }, 'gpus: names GPUs this machine does not have (index or UUID); they are left out of infermeter_gpu_engine_info');
    }
    const rows = joinRows(targets, gpus, apps);
    this.gauge.reset();
    for (const row of rows) this.gauge.set({ ...row }, 1);
    this.machine.setGpuEngines({ rows: rows.map((r) => ({ gpu: Number(r.gpu), uuid: r.uuid, upstream: r.upstream })), at: Date.now() });
  }

  private clear(): void {
    this.gauge.reset();
    this.machine.setGpuEngines(null);
  }

  private async gpuIds(): Promise<GpuId[]> {
    const r = await runCommand(this.options.binary, ['--query-gpu=index,uuid', '--format=csv,noheader,nounits'], QUERY_TIMEOUT_MS);
    if (r.code !== 0) {
      this.clear();
      throw new CollectorError(r.error ? 'not_found' : 'query_failed', `nvidia-smi --query-gpu=index,uuid failed (${r.error ? r.error.message : `exit ${r.code ?? r.signal}`})`);
    }
    const table = parseQueryCsv(r.stdout, ['index', 'uuid']);
    const out: GpuId[] = [];
    for (const row of table.rows) {
      const index = queryNumber(row[0] ?? null);
      if (index !== null && Number.isInteger(index) && row[1]) out.push({ index, uuid: row[1] });
    }
    return out;
  }

  close(): void {
    this.clear();
  }
}

export const GPU_ENGINE_COLLECTOR: CollectorEntry = {
  name: 'gpu_engine',
  interval: (c) => c.engineInterval,
  enabled: (c) => c.collectorGpu && (c.upstreams.length > 1 || c.upstreams.some((u) => u.gpus.length > 0)),
  create: (ctx) => new GpuEngineJoinCollector(ctx, { binary: ctx.config.nvidiaSmi, upstreams: ctx.config.upstreams }),
};
