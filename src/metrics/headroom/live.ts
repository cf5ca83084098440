/**
 * Headroom on the metrics side (docs/headroom.md): a consumer of the judged batch
 * (metrics/consumer.ts) and a reader of the machine snapshot. It keeps each model's finished
 * requests of the last --headroom-window, and every --bottleneck-interval estimates each
 * model's capacity (estimate.ts) and publishes infermeter_capacity_requests_per_second and
 * infermeter_load_ratio. A model whose capacity is unknown has neither series (an alert or
 * an autoscaler must not read a guess); the status JSON says why.
 */
import type { Gauge, Registry } from 'prom-client';
import type { Logger } from 'pino';
import { gauge } from '../../lib/metric-def.js';
import type { JudgedBatch } from '../batch.js';
import type { BatchConsumer } from '../consumer.js';
import type { LiveSettings } from '../live.js';
import { routeByLabel } from '../../record/routes.js';
import type { RequestRecord } from '../../record/record.js';
import { thresholdsFor, type SloConfig } from '../../slo/config.js';
import type { MachineReader } from '../../collectors/snapshot.js';
import { HEADROOM_METRICS } from '../catalog.js';
import { observe, type HeadroomRequest } from './observe.js';
import { estimateCapacity, type CapacityEstimate } from './estimate.js';
import { LimitHistory } from './limits.js';
import { Draws } from './queue.js';
import { calibrate, type HeadroomBench } from './bench.js';

/** The flags this consumer reads (SideOptions extends it; config/flags.ts fills it). */
export interface HeadroomSettings {
  /** Seconds of finished requests each estimate is fitted on. */
  headroomWindow: number;
}

export interface HeadroomOptions {
  registry: Registry;
  machine: MachineReader;
  slos: SloConfig;
  intervalSeconds: number;
  windowSeconds: number;
  /** The upstreams that list a model label (several upstreams); absent: the whole machine. */
  upstreamsOf?: (label: string) => readonly string[];
  /** From --bottleneck-bench: the bench's knee calibrates an estimate made at the same mix. */
  bench?: HeadroomBench | null;
  log: Logger;
  now?: () => number;
}

/** Upper bound on requests kept per model: past it the window holds the newest only. */
export const MAX_REQUESTS = 16384;
/** A model with no request for this long leaves the estimates and the gauges. */
const IDLE_MS = 3600_000;

interface ModelEntry {
  requests: HeadroomRequest[];
  /** Finish times (Unix ms) of every finished request, failures included: today's rate. */
  finished: number[];
  firstSeen: number;
  lastSeen: number;
  limits: LimitHistory;
  estimate: CapacityEstimate | null;
}

export class HeadroomMonitor implements BatchConsumer {
  readonly name = 'headroom';
  private readonly models = new Map<string, ModelEntry>();
  private readonly capacity: Gauge;
  private readonly loadRatio: Gauge;
  private readonly draws = new Draws();
  private timer: NodeJS.Timeout | null = null;
  private running = false;
  private readonly now: () => number;

  constructor(private readonly opts: HeadroomOptions) {
    this.now = opts.now ?? Date.now;
    this.capacity = gauge(opts.registry, HEADROOM_METRICS[0]);
    this.loadRatio = gauge(opts.registry, HEADROOM_METRICS[1]);
  }

  applyLive(live: LiveSettings): void {
    this.opts.slos = live.slos;
  }

  ingest(batch: JudgedBatch): void {
    batch.records.forEach((r, i) => {
      if (!routeByLabel(r.route).metered) return;
      // Client aborts and refused requests say nothing about what the engine can take.
      if (r.outcome === 'client_abort' || r.outcome === 'rejected' || r.outcome === 'worker_lost') return;
      const label = batch.labels[i]!;
      const end = r.startedAt + Math.max(0, r.e2e) * 1000;
      let m = this.models.get(label);
      if (!m) this.models.set(label, (m = { requests: [], finished: [], firstSeen: r.startedAt, lastSeen: end, limits: new LimitHistory(), estimate: null }));
      m.lastSeen = Math.max(m.lastSeen, end);
      m.finished.push(end);
      const req = usable(r);
      if (req) m.requests.push(req);
      if (m.requests.length > MAX_REQUESTS) m.requests.splice(0, m.requests.length - MAX_REQUESTS);
      if (m.finished.length > MAX_REQUESTS * 4) m.finished.splice(0, m.finished.length - MAX_REQUESTS * 4);
    });
  }

  /** The current estimate per model label (null until the first evaluation). */
  capacities(): ReadonlyMap<string, CapacityEstimate> {
    const out = new Map<string, CapacityEstimate>();
    for (const [label, m] of this.models) if (m.estimate) out.set(label, m.estimate);
    return out;
  }

  /** One evaluation: read the engines, estimate every model, publish the gauges. */
  evaluate(): void {
    if (this.running) return;
    this.running = true;
    try {
      const now = this.now();
      const windowMs = this.opts.windowSeconds * 1000;
      const machine = this.opts.machine.read();
      for (const [label, m] of this.models) {
        if (m.lastSeen < now - IDLE_MS) {
          this.models.delete(label);
          this.capacity.remove({ gen_ai_request_model: label });
          this.loadRatio.remove({ gen_ai_request_model: label });
          continue;
        }
        const from = Math.max(now - windowMs, m.firstSeen);
        m.limits.add(machine, this.opts.upstreamsOf?.(label) ?? [], now - windowMs);
        prune(m, now - windowMs);
        const spanSeconds = (now - from) / 1000;
        const rate = spanSeconds > 0 ? m.finished.filter((t) => t >= from).length / spanSeconds : 0;
        const est = estimateCapacity({
          observation: observe(m.requests, from, now), requestsPerSecond: rate, thresholds: thresholdsFor(this.opts.slos, label),
          objective: this.opts.slos.objective, limits: m.limits.limits(),
        }, this.draws);
        m.estimate = this.opts.bench ? calibrate(est, this.opts.bench, m.requests) : est;
        if (m.estimate.state === 'estimate') {
          this.capacity.set({ gen_ai_request_model: label }, m.estimate.requestsPerSecond!);
          this.loadRatio.set({ gen_ai_request_model: label }, m.estimate.loadRatio!);
        } else {
          this.capacity.remove({ gen_ai_request_model: label });
          this.loadRatio.remove({ gen_ai_request_model: label });
        }
      }
    } finally {
      this.running = false;
    }
  }

  start(): void {
    const tick = () => {
      try {
        this.evaluate();
      } catch (err) {
        this.opts.log.warn({ err: (err as Error).message }, 'headroom: an estimate failed; will keep trying');
      }
    };
    this.timer = setInterval(tick, this.opts.intervalSeconds * 1000);
    this.timer.unref();
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}

/** A finished ok stream with its first token seen: what the model is fitted on. */
function usable(r: RequestRecord): HeadroomRequest | null {
  if (r.outcome !== 'ok' || !r.streamed || r.meteringFailure !== null || r.ttft < 0 || r.e2e < r.ttft) return null;
  return { start: r.startedAt, ttft: r.ttft, e2e: r.e2e, inputTokens: r.inputTokensKnown ? r.inputTokens : 0, outputTokens: r.outputTokens };
}

/** Drops what finished before `from` (Unix ms); both lists arrive about in finish order. */
function prune(m: ModelEntry, from: number): void {
  let i = 0;
  while (i < m.requests.length && m.requests[i]!.start + m.requests[i]!.e2e * 1000 < from) i++;
  if (i > 0) m.requests.splice(0, i);
  let j = 0;
  while (j < m.finished.length && m.finished[j]! < from) j++;
  if (j > 0) m.finished.splice(0, j);
}
