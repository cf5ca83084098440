/**
 * Samples what the GPU and the engine were doing during the bench, reusing the collectors'
 * parts: the supervised `nvidia-smi dmon` child and its parser (collectors/gpu), and the
 * engine scrape plus alias mapping (collectors/engine). Every sample is kept with its time;
 * a missing source is recorded as an error string, never thrown.
 */
import { performance } from 'node:perf_hooks';
import { DmonChild } from '../collectors/gpu/dmon-child.js';
import { SHOW_ALL_DEVICES_ENV } from '../collectors/gpu/plan.js';
import { GpuEnergy } from '../collectors/gpu/energy.js';
import { parseScrape } from '../collectors/engine/collector.js';
import { normalize } from '../collectors/engine/normalize.js';
import { cacheConfigOf, type EngineCacheConfig } from '../collectors/engine/cache-config.js';
import type { AliasTable } from '../collectors/engine/aliases.js';
import { ScrapeClient } from '../collectors/engine/scrape.js';
import type { Snapshot } from '../collectors/engine/normalize.js';
import type { EngineKind } from '../lib/engines.js';
import type { EngineSample, GpuSample } from './report.js';

export interface MonitorOptions {
  /** null: no GPU source (nvidia-smi absent). */
  nvidiaSmi: string | null;
  /** null: no engine metrics. */
  engineMetrics: string | null;
  engine: EngineKind;
  /** How the scrape's names map onto the engine families: the engine's aliases, or infermeter's own series read back (aliases.ts). */
  aliases: AliasTable | undefined;
  intervalMs: number;
  /** performance.now() of the bench start; samples are timed from it. */
  origin: number;
  env?: NodeJS.ProcessEnv;
}

/** dmon -s p (power), u (utilization), c (clocks), v (power/thermal violations), m (memory). */
const DMON_GROUPS = 'pucvm';

export class Monitor {
  readonly gpu: GpuSample[] = [];
  readonly engine: EngineSample[] = [];
  gpuError: string | null = null;
  engineError: string | null = null;
  private child: DmonChild | null = null;
  private timer: NodeJS.Timeout | null = null;
  private scraper: ScrapeClient | null = null;
  private scraping = false;
  /** Each GPU's energy from its power readings, integrated as the GPU collector integrates it. */
  private readonly energy = new GpuEnergy();

  constructor(private readonly opts: MonitorOptions) {
    if (!opts.nvidiaSmi) this.gpuError = 'no nvidia-smi';
    if (!opts.engineMetrics) this.engineError = 'no engine metrics URL';
    else if (!opts.aliases) this.engineError = `no metric aliases for engine ${opts.engine}`;
  }

  start(): void {
    const seconds = Math.max(1, Math.round(this.opts.intervalMs / 1000));
    if (this.opts.nvidiaSmi) {
      this.child = new DmonChild(
        {
          binary: this.opts.nvidiaSmi, args: ['dmon', '-s', DMON_GROUPS, '-d', String(seconds)],
          sampleMs: seconds * 1000, stallAfterMs: seconds * 5000, startupGraceMs: 15_000,
          backoffBaseMs: 1000, backoffMaxMs: 10_000, backoffResetMs: 60_000, env: { ...(this.opts.env ?? process.env), ...SHOW_ALL_DEVICES_ENV },
        },
        {
          sample: (s) => {
            const v = (name: string) => s.values.get(name) ?? null;
            const t = this.now();
            const energyJoules = this.energy.observe(s.gpu, { powerWatts: v('infermeter_gpu_power_watts'), counterJoules: null }, t * 1000);
            this.gpu.push({
              t, gpu: s.gpu,
              utilization: v('infermeter_gpu_sm_utilization_ratio'),
              memoryUtilization: v('infermeter_gpu_memory_utilization_ratio'),
              memoryUsedBytes: v('infermeter_gpu_memory_used_bytes'),
              powerWatts: v('infermeter_gpu_power_watts'),
              powerViolation: v('infermeter_gpu_power_violation_ratio'),
              thermalViolation: v('infermeter_gpu_thermal_violation'),
              energyJoules,
            });
          },
          invalidLine: () => undefined,
          unknownColumn: () => undefined,
          restart: (reason, _delay, exit) => {
            this.gpuError = `nvidia-smi dmon ${reason}${exit.stderrTail ? `: ${exit.stderrTail.split('\n').pop()}` : ''}`;
          },
        },
      );
      this.child.start();
    }
    if (this.opts.engineMetrics && this.opts.aliases) {
      this.scraper = new ScrapeClient(this.opts.engineMetrics);
      this.timer = setInterval(() => void this.scrape(), this.opts.intervalMs);
      void this.scrape();
    }
  }

  /** The engine's KV cache as its last scrape reported it (docs/prefix-cache.md); null: none reported. */
  cacheConfig: EngineCacheConfig | null = null;

  private async scrape(): Promise<void> {
    if (this.scraping || !this.scraper) return;
    this.scraping = true;
    try {
      const scrape = parseScrape(await this.scraper.fetch(AbortSignal.timeout(Math.max(500, this.opts.intervalMs))));
      const snap = normalize(scrape, this.opts.aliases!, this.opts.engine);
      this.cacheConfig = cacheConfigOf(scrape.samples, this.opts.engine) ?? this.cacheConfig;
      this.engine.push({
        t: this.now(),
        kvCacheUsage: first(snap, 'infermeter_engine_kv_cache_usage_ratio'),
        requestsRunning: first(snap, 'infermeter_engine_requests_running'),
        requestsWaiting: first(snap, 'infermeter_engine_requests_waiting'),
        prefixCacheQueries: first(snap, 'infermeter_engine_prefix_cache_queries_total'),
        prefixCacheHits: first(snap, 'infermeter_engine_prefix_cache_hits_total'),
        preemptions: first(snap, 'infermeter_engine_preemptions_total'),
        queueTime: histogram(snap, 'infermeter_engine_queue_time_seconds'),
        prefillTime: histogram(snap, 'infermeter_engine_prefill_time_seconds'),
      });
    } catch (err) {
      this.engineError = (err as Error).message;
    } finally {
      this.scraping = false;
    }
  }

  private now(): number {
    return (performance.now() - this.opts.origin) / 1000;
  }

  /** Samples taken in [from, to] seconds since the bench started, and the engine sample just before. */
  between(from: number, to: number): { gpu: GpuSample[]; engine: EngineSample[]; before: EngineSample | null } {
    const before = this.engine.filter((s) => s.t < from).pop() ?? null;
    return { gpu: this.gpu.filter((s) => s.t >= from && s.t <= to), engine: this.engine.filter((s) => s.t >= from && s.t <= to), before };
  }

  /** Takes one engine sample now (phase boundaries), so counter deltas cover the whole phase. */
  async sampleEngine(): Promise<void> {
    while (this.scraping) await new Promise((r) => setTimeout(r, 5));
    await this.scrape();
  }

  /**
   * Waits (at most a few sampling intervals) until every GPU seen has a reading at or after
   * `t` seconds, so the energy of a phase that ends at `t` is read, not extrapolated.
   */
  async gpuReadThrough(t: number): Promise<void> {
    const deadline = performance.now() + 3 * Math.max(1000, this.opts.intervalMs);
    const behind = () => {
      const latest = new Map<number, number>();
      for (const s of this.gpu) latest.set(s.gpu, s.t);
      return [...latest.values()].some((at) => at < t);
    };
    while (this.child && behind() && performance.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await Promise.all([this.child?.stop(1000), this.scraper?.close()]);
    if (this.gpu.length > 0 && this.gpuError?.startsWith('nvidia-smi dmon exited')) this.gpuError = null;
  }
}

/** A normalized histogram's _sum and _count (null: the engine has no such histogram). */
function histogram(snap: Snapshot, name: Parameters<Snapshot['get']>[0]): { sum: number; count: number } | null {
  const values = snap.get(name);
  if (!values) return null;
  let sum: number | null = null;
  let count = 0;
  for (const v of values) {
    if (v.metricName === `${name}_sum`) sum = (sum ?? 0) + v.value;
    else if (v.metricName === `${name}_count`) count += v.value;
  }
  return sum === null ? null : { sum, count };
}

function first(snap: Snapshot, name: Parameters<Snapshot['get']>[0]): number | null {
  return snap.get(name)?.[0]?.value ?? null;
}
