/**
 * The status page's state on the metrics side: per model rings (model-state.ts) fed by the
 * request records, and once a second the collectors' latest values, read from the machine
 * snapshot (collectors/snapshot.ts), into a 15-minute ring. Nothing here runs on the proxy's
 * loop, and every structure has a fixed size: models are bounded by the model label
 * (models.ts), GPUs by MAX_GPUS, engines by the configured upstreams, and a model that sent
 * nothing for an hour is dropped.
 */
import type { JudgedBatch } from '../../metrics/batch.js';
import type { SloConfig } from '../../slo/config.js';
import { Ring } from './ring.js';
import { CHART_SECONDS, COARSE_SLOT_SECONDS, COARSE_SLOTS, ModelState, coarseRange } from './model-state.js';
import { MAX_GPUS, readCollectors, readEngine, readEngines, readGpus, type CollectorStatus, type EngineTotals, type GpuStatus, type UpstreamEngine } from './machine-read.js';
import type { MachineReader } from '../../collectors/snapshot.js';
import { ABOUT_SERVER_ROUTES, apiLabelOf } from '../../record/routes.js';

/** host ring fields. */
export const HOST_FIELDS = ['inFlight', 'kvCacheUsage', 'engineRunning', 'engineWaiting'] as const;
/** Engine counter readings kept at 10 s, for windowed rates: 5 minutes and one more. */
const ENGINE_SLOTS = 31;
/** At most this many engines' counters (MAX_UPSTREAMS: the upstreams come from the config). */
const MAX_ENGINES = 64;
/** The engine counters kept per upstream, in this order. */
export const ENGINE_COUNTERS = ['preemptionsTotal', 'prefixCacheHitsTotal', 'prefixCacheQueriesTotal'] as const;
export type EngineCounter = (typeof ENGINE_COUNTERS)[number];

export interface StatusStateOptions {
  slos: SloConfig;
  /** What the collectors last read (CollectorRunner.machine). */
  machine: MachineReader;
  /** Unix ms (tests drive a fake clock). */
  now?: () => number;
  random?: () => number;
}

export class StatusState {
  readonly models = new Map<string, ModelState>();
  /** Every model together: the charts' default view. */
  readonly all: ModelState;
  /** Every model together, per generation API (routes.ts API_LABELS: four at most). */
  readonly apis = new Map<string, ModelState>();
  readonly host = new Ring(CHART_SECONDS, HOST_FIELDS.length, (n) => new Float32Array(n), NaN);
  readonly gpuUtil = new Map<string, Ring<Float32Array>>();
  /** Per upstream, its engine's counters (ENGINE_COUNTERS) at 10 s: each engine's own, so one that dies or restarts moves no other's rate. */
  readonly engineCounters = new Map<string, Ring>();
  readonly startedAt: number;
  inFlight = 0;
  /** Requests per route (the API split) per coarse slot, the last hour's slots only. */
  readonly routeSlots = new Map<number, Map<string, number>>();
  /** Generation requests in flight per model label now (the proxy's count; empty until one is reported). */
  inFlightByModel: ReadonlyMap<string, number> = new Map();
  gpus: GpuStatus[] = [];
  /** Every engine together (null: none has a figure). */
  engine: EngineTotals | null = null;
  /** Each upstream's engine, in configured order, a dead one included. */
  engines: UpstreamEngine[] = [];
  collectors: CollectorStatus[] = [];
  /** The last second whose chart point is final. */
  closedThrough: number;
  readonly now: () => number;
  private readonly random: () => number;
  private ticking = false;
  /** Each upstream's engine kind as last read (bounded by the upstreams). */
  private readonly kinds = new Map<string, string>();

  constructor(private readonly opts: StatusStateOptions) {
    this.now = opts.now ?? Date.now;
    this.random = opts.random ?? Math.random;
    this.all = new ModelState(this.random);
    this.startedAt = this.now();
    this.closedThrough = Math.floor(this.startedAt / 1000) - 1;
  }

  get slos(): SloConfig {
    return this.opts.slos;
  }

  /** Requests per route over the last `seconds` (coarse slots, the current one included). */
  routes(seconds: number): Record<string, number> {
    const [from, to] = coarseRange(this.now(), seconds);
    const out: Record<string, number> = {};
    for (const [slot, routes] of this.routeSlots) {
      if (slot < from || slot > to) continue;
      for (const [route, n] of routes) out[route] = (out[route] ?? 0) + n;
    }
    return out;
  }

  /** A config reload's SLOs (the page shows the thresholds; the records come judged, metrics/batch.ts). */
  set slos(slos: SloConfig) {
    this.opts.slos = slos;
  }

  /** Records with their labels and verdicts, and the machine's requests in flight. */
  ingest(batch: JudgedBatch): void {
    const { records, inFlightByModel } = batch;
    this.inFlight = batch.inFlight;
    if (inFlightByModel) this.inFlightByModel = inFlightByModel;
    if (records.length === 0) return;
    const now = this.now();
    const slot = Math.floor(now / (COARSE_SLOT_SECONDS * 1000));
    let routes = this.routeSlots.get(slot);
    if (!routes) {
      this.routeSlots.set(slot, (routes = new Map()));
      for (const k of this.routeSlots.keys()) if (k < slot - 3600 / COARSE_SLOT_SECONDS) this.routeSlots.delete(k);
    }
    records.forEach((r, i) => {
      routes!.set(r.route, (routes!.get(r.route) ?? 0) + 1);
      // A poll of the server's own paths (its /metrics, model list) is counted by route only: not a model's request.
      if (ABOUT_SERVER_ROUTES.has(r.route)) return;
      const label = batch.labels[i]!;
      let m = this.models.get(label);
      if (!m) this.models.set(label, (m = new ModelState(this.random)));
      const verdicts = batch.verdicts[i]!;
      m.record(r, verdicts, now);
      this.all.record(r, verdicts, now);
      const api = apiLabelOf(r.route);
      if (api === null) return;
      let a = this.apis.get(api);
      if (!a) this.apis.set(api, (a = new ModelState(this.random)));
      a.record(r, verdicts, now);
    });
  }

  /**
   * Closes every second that has ended since the last tick (chart points) and reads the
   * collectors' values into the second just ended. Called once a second; a late call
   * catches up, at most one chart's worth.
   */
  async tick(): Promise<void> {
    if (this.ticking) return;
    this.ticking = true;
    try {
      const now = this.now();
      const last = Math.floor(now / 1000) - 1;
      for (let s = Math.max(this.closedThrough + 1, last - CHART_SECONDS + 1); s <= last; s++) {
        for (const m of this.models.values()) m.close(s);
        this.all.close(s);
      }
      this.closedThrough = Math.max(this.closedThrough, last);
      this.readMachine(last, now);
      this.evictIdle(now);
    } finally {
      this.ticking = false;
    }
  }

  private readMachine(second: number, now: number): void {
    const machine = this.opts.machine.read();
    const gpus = readGpus(machine);
    const engine = readEngine(machine);
    const collectors = readCollectors(machine);
    this.gpus = gpus;
    this.collectors = collectors;
    this.engines = readEngines(machine).map((e) => ({ ...e, engine: this.engineKind(e) }));
    const hasEngine = Object.values(engine).some((v) => v !== null);
    this.engine = hasEngine ? engine : null;
    this.host.set(second, 0, this.inFlight);
    this.host.set(second, 1, engine.kvCacheUsage ?? NaN);
    this.host.set(second, 2, engine.running ?? NaN);
    this.host.set(second, 3, engine.waiting ?? NaN);
    for (const g of gpus) {
      let ring = this.gpuUtil.get(g.gpu);
      if (!ring) {
        if (this.gpuUtil.size >= MAX_GPUS) continue;
        this.gpuUtil.set(g.gpu, (ring = new Ring(CHART_SECONDS, 1, (n) => new Float32Array(n), NaN)));
      }
      ring.set(second, 0, g.utilization ?? NaN);
    }
    // A GPU that stopped reporting 15 minutes ago has nothing left to draw.
    for (const [id, ring] of this.gpuUtil) if (ring.last < second - CHART_SECONDS) this.gpuUtil.delete(id);
    const slot = Math.floor(now / (COARSE_SLOT_SECONDS * 1000));
    for (const e of this.engines) {
      let ring = this.engineCounters.get(e.upstream);
      if (!ring) {
        if (this.engineCounters.size >= MAX_ENGINES) continue;
        this.engineCounters.set(e.upstream, (ring = new Ring(ENGINE_SLOTS, ENGINE_COUNTERS.length, (n) => new Float64Array(n), NaN)));
      }
      // A dead engine's slot holds no value: it has no rate until it answers again.
      const counters = ring;
      ENGINE_COUNTERS.forEach((f, i) => counters.set(slot, i, e[f] ?? NaN));
    }
  }

  /** An engine's kind as last read: a dead one keeps the name it had. */
  private engineKind(e: UpstreamEngine): string | null {
    if (e.engine !== null) this.kinds.set(e.upstream, e.engine);
    return this.kinds.get(e.upstream) ?? null;
  }

  /** A model idle for the whole coarse window (1 h) has no figure left to show. */
  private evictIdle(now: number): void {
    const horizon = now - COARSE_SLOTS * COARSE_SLOT_SECONDS * 1000;
    for (const [label, m] of this.models) if (m.lastSeen < horizon) this.models.delete(label);
    for (const [api, m] of this.apis) if (m.lastSeen < horizon) this.apis.delete(api);
  }

  /**
   * Increase of one upstream's engine counter over the last `seconds` (null: not enough
   * readings, or the engine does not answer now). A counter that went down (engine restart)
   * counts from zero.
   */
  engineIncrease(upstream: string, field: EngineCounter, seconds: number): number | null {
    const ring = this.engineCounters.get(upstream);
    if (!ring || !Number.isFinite(ring.last)) return null;
    const i = ENGINE_COUNTERS.indexOf(field);
    const to = ring.last;
    const newest = ring.get(to, i);
    if (!Number.isFinite(newest)) return null;
    const span = Math.min(Math.ceil(seconds / COARSE_SLOT_SECONDS), ENGINE_SLOTS - 1);
    for (let s = to - span; s < to; s++) {
      const old = ring.get(s, i);
      if (Number.isFinite(old)) return newest >= old ? newest - old : newest;
    }
    return null;
  }

  /** The sum of every engine's increase (null: no engine has one). */
  enginesIncrease(field: EngineCounter, seconds: number): number | null {
    let sum: number | null = null;
    for (const upstream of this.engineCounters.keys()) {
      const v = this.engineIncrease(upstream, field, seconds);
      if (v !== null) sum = (sum ?? 0) + v;
    }
    return sum;
  }

  /** Bytes held in typed arrays by every ring (the bulk of this state's memory). */
  get bytes(): number {
    let n = this.all.bytes + this.host.bytes;
    for (const r of this.engineCounters.values()) n += r.bytes;
    for (const m of this.models.values()) n += m.bytes;
    for (const m of this.apis.values()) n += m.bytes;
    for (const r of this.gpuUtil.values()) n += r.bytes;
    return n;
  }
}
