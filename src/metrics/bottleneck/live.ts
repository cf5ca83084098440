/**
 * The bottleneck verdict on the metrics side: every `intervalSeconds` it reads the machine
 * snapshot (machine.ts over collectors/snapshot.ts), builds each model's signals over the last `windowSeconds` from the request
 * records it was handed (window.ts), judges them (judge.ts, with hysteresis) and publishes
 * the one-hot gauge infermeter_bottleneck{gen_ai_request_model, kind}. The status JSON,
 * the page and the gauge read the same verdicts from here.
 */
import type { Gauge, Registry } from 'prom-client';
import type { Logger } from 'pino';
import { gauge } from '../../lib/metric-def.js';
import type { JudgedBatch } from '../batch.js';
import type { BatchConsumer } from '../consumer.js';
import type { LiveSettings } from '../live.js';
import { routeByLabel } from '../../record/routes.js';
import { thresholdsFor, type SloConfig } from '../../slo/config.js';
import { BOTTLENECK_METRICS } from '../catalog.js';
import { BottleneckJudge, DEFAULT_CONFIRM, type BottleneckVerdict } from './judge.js';
import { MachineHistory, readMachine } from './machine.js';
import { BOTTLENECK_KINDS, FALLBACK_TARGETS, MIN_REQUESTS } from './rules.js';
import { emptySignals, mean, quantile, ratio, type PrefixReading, type Signals } from './signals.js';
import { ModelWindow, type WindowStats } from './window.js';
import type { BenchLimit } from './capacity.js';
import type { MachineReader } from '../../collectors/snapshot.js';

export type { BottleneckSettings } from './capacity.js';

export interface BottleneckOptions {
  /** Where infermeter_bottleneck is registered. */
  registry: Registry;
  /** What the collectors last read (CollectorRunner.machine). */
  machine: MachineReader;
  slos: SloConfig;
  /** The configured engine kind (advice names its flags first). */
  engine: string;
  intervalSeconds: number;
  windowSeconds: number;
  confirm?: number;
  /**
   * The upstreams (their names) whose /v1/models lists a model label (ModelLabels.upstreamsOf):
   * the model's verdict reads their engine series and GPUs (issue 26). Absent (one upstream),
   * or empty for a label: the whole machine.
   */
  upstreamsOf?: (label: string) => readonly string[];
  /** The prefix-cache model's reading of a model (--prefix-cache; PrefixCacheMonitor.reading); absent: it is off. */
  prefix?: (label: string) => PrefixReading | null;
  /** From --bottleneck-bench: `none` then says how much of that load is in use. */
  benchLimit?: BenchLimit | null;
  log: Logger;
  now?: () => number;
}

/** A model with no request for this long leaves the verdicts and the gauge. */
const IDLE_MS = 3600_000;

interface ModelEntry {
  window: ModelWindow;
  judge: BottleneckJudge;
  /** Lowest windowed TPOT median at low concurrency (null: not seen yet). */
  tpotFloor: number | null;
}

export class BottleneckMonitor implements BatchConsumer {
  readonly name = 'bottleneck';
  private readonly models = new Map<string, ModelEntry>();
  private readonly machine = new MachineHistory();
  private readonly gauge: Gauge;
  private timer: NodeJS.Timeout | null = null;
  private running = false;
  private readonly now: () => number;

  constructor(private readonly opts: BottleneckOptions) {
    this.now = opts.now ?? Date.now;
    this.gauge = gauge(opts.registry, BOTTLENECK_METRICS[0]);
  }

  applyLive(live: LiveSettings): void {
    this.opts.slos = live.slos;
  }

  ingest(batch: JudgedBatch): void {
    const at = this.now();
    batch.records.forEach((r, i) => {
      if (!routeByLabel(r.route).metered) return;
      const label = batch.labels[i]!;
      let m = this.models.get(label);
      if (!m) this.models.set(label, (m = { window: new ModelWindow(), judge: new BottleneckJudge({ confirm: this.opts.confirm ?? DEFAULT_CONFIRM }), tpotFloor: null }));
      m.window.add(r, batch.verdicts[i]!, at);
    });
  }

  /** The current verdict per model label. */
  verdicts(): ReadonlyMap<string, BottleneckVerdict> {
    const out = new Map<string, BottleneckVerdict>();
    for (const [label, m] of this.models) if (m.judge.verdict) out.set(label, m.judge.verdict);
    return out;
  }

  /** One evaluation: read the machine, judge every model, publish the gauge. */
  async evaluate(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      const now = this.now();
      const from = now - this.opts.windowSeconds * 1000;
      this.machine.add(readMachine(this.opts.machine.read(), now), from);
      for (const [label, m] of this.models) {
        if (m.window.lastSeen < now - IDLE_MS) {
          this.models.delete(label);
          for (const kind of BOTTLENECK_KINDS) this.gauge.remove({ gen_ai_request_model: label, kind });
          continue;
        }
        m.window.prune(from);
        const v = m.judge.update(this.signalsOf(label, m), now);
        for (const kind of BOTTLENECK_KINDS) this.gauge.set({ gen_ai_request_model: label, kind }, kind === v.kind ? 1 : 0);
      }
    } finally {
      this.running = false;
    }
  }

  private signalsOf(label: string, m: ModelEntry): Signals {
    const st = m.window.stats();
    if (st.tpotAlone.length >= MIN_REQUESTS) m.tpotFloor = Math.min(m.tpotFloor ?? Infinity, quantile(st.tpotAlone, 0.5)!);
    const s = modelSignals(st, thresholdsFor(this.opts.slos, label), m.tpotFloor, this.opts.windowSeconds, this.opts.engine);
    const machine = this.machine.signals(mean(st.ttft), this.opts.upstreamsOf?.(label));
    Object.assign(s.values, machine.values);
    Object.assign(s.basis, machine.basis);
    s.values.proxyLagShare = ratio(s.values.proxyLoopDelayP99, s.values.ttftP50);
    if (this.opts.prefix) {
      const p = (s.prefix = this.opts.prefix(label));
      if (p) {
        s.values.prefixReuseTraffic = p.traffic;
        s.values.prefixReuseEngineSize = p.engineSize;
        s.values.prefixReuseDelivered = p.delivered;
        if (p.deliveredFrom) s.basis.prefixReuseDelivered = p.deliveredFrom;
        if (p.keptShare < 1) s.basis.prefixReuseTraffic = `${(p.keptShare * 100).toFixed(0)}% of requests hashed (sampled or shed under load): an estimate`;
      }
    }
    const limit = this.opts.benchLimit;
    if (limit) {
      s.values.loadVsBenchLimit = ratio(s.values.requestsPerSecond, limit.requestsPerSecond);
      s.basis.loadVsBenchLimit = `--bottleneck-bench: the SLO broke at ${Number(limit.requestsPerSecond.toPrecision(3))} req/s, ${limit.step}`;
    }
    return s;
  }

  start(): void {
    const tick = () => void this.evaluate().catch((err: Error) => this.opts.log.warn({ err: err.message }, 'bottleneck: an evaluation failed; will keep trying'));
    this.timer = setInterval(tick, this.opts.intervalSeconds * 1000);
    this.timer.unref();
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}

/** The request half of the signals, from one model's window. */
export function modelSignals(st: WindowStats, t: { ttft?: number; tpot?: number }, tpotFloor: number | null, windowSeconds: number, engine: string): Signals {
  const s = emptySignals(windowSeconds, engine);
  const v = s.values;
  v.requests = st.requests;
  v.requestsPerSecond = st.requests / windowSeconds;
  v.failureRatio = st.requests > 0 ? st.failed / st.requests : null;
  v.ttftP50 = quantile(st.ttft, 0.5);
  v.ttftP99 = quantile(st.ttft, 0.99);
  v.tpotP50 = quantile(st.tpot, 0.5);
  const tpotP99 = quantile(st.tpot, 0.99);
  v.ttftOverTarget = ratio(v.ttftP99, t.ttft ?? FALLBACK_TARGETS.ttft);
  v.tpotOverTarget = ratio(tpotP99, t.tpot ?? FALLBACK_TARGETS.tpot);
  if (t.ttft === undefined) s.basis.ttftOverTarget = `no TTFT SLO: fallback target ${FALLBACK_TARGETS.ttft} s`;
  if (t.tpot === undefined) s.basis.tpotOverTarget = `no TPOT SLO: fallback target ${FALLBACK_TARGETS.tpot} s`;
  const over = [v.ttftOverTarget, v.tpotOverTarget].filter((x): x is number => x !== null);
  v.latencyOverTarget = over.length ? Math.max(...over) : null;
  v.tpotFloor = tpotFloor;
  v.tpotGrowth = ratio(v.tpotP50, tpotFloor);
  v.sloAttainment = st.sloAttainment;
  return s;
}
