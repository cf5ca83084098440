/**
 * Energy and cost per model: a consumer of the judged batch (the work of each request, its
 * verdicts) and a reader of the machine snapshot (each GPU's energy counter, the GPU-engine
 * join). Once a second it takes each GPU's energy increase from the snapshot, hands it and the
 * requests' work to the ledger (ledger.ts), and counts what the ledger has split:
 * infermeter_energy_joules_total, infermeter_cost_total and the output tokens they cover
 * (defs.ts), and the status page's windows (window.ts). docs/energy.md says how and why.
 */
import { Counter, type Registry } from 'prom-client';
import type { Logger } from 'pino';
import type { EnergySource } from '../../collectors/gpu/energy.js';
import type { MachineReader, MachineState } from '../../collectors/snapshot.js';
import type { UpstreamSpec } from '../../lib/upstream-spec.js';
import type { JudgedBatch } from '../batch.js';
import { ABOUT_SERVER_ROUTES } from '../../record/routes.js';
import type { BatchConsumer } from '../consumer.js';
import { COST_METRIC, ENERGY_METRIC, ENERGY_METRICS, ENERGY_TOKENS_METRIC } from './defs.js';
import { EnergyLedger, type Share } from './ledger.js';
import { InFlightStarts } from './in-flight.js';
import { anyPrice, costOf, pricesByUpstream, type EnergySettings, type Prices } from './settings.js';
import { EnergyWindow, WINDOW_MS, type ModelEnergy, type UpstreamEnergy } from './window.js';
import { WASTE_METRICS, WASTED_GPU_SECONDS } from '../waste/defs.js';
import { promptTokensOf, wasteCauseOf } from '../waste/ledger.js';

export interface EnergyMeterOptions {
  registry: Registry;
  machine: MachineReader;
  settings: EnergySettings;
  upstreams: readonly UpstreamSpec[];
  log: Logger;
  /** Unix ms (tests drive a clock of their own). */
  now?: () => number;
}

/** What the status page shows (exporters/ui/status-json.ts). */
export interface EnergyStatus {
  /** null: no price is set, so no cost. */
  currency: string | null;
  windowSeconds: number;
  /** Unix ms up to which seconds have been attributed (the ledger waits for requests in flight); null: none yet. */
  attributedThrough: number | null;
  models: ReadonlyMap<string, ModelEnergy>;
  upstreams: UpstreamEnergy[];
  gpus: { gpu: string; source: EnergySource; joules: number }[];
  series: ReturnType<EnergyWindow['series']>;
}

export class EnergyMeter implements BatchConsumer {
  readonly name = 'energy';
  private readonly ledger = new EnergyLedger();
  private readonly window: EnergyWindow;
  private readonly prices: Map<string, Prices>;
  private readonly names: readonly string[];
  private readonly energy: Counter;
  private readonly cost: Counter;
  private readonly tokens: Counter;
  private readonly wasted: Counter;
  private readonly now: () => number;
  /** Each GPU's energy at its last increase, and when. */
  private readonly gpuLast = new Map<number, { joules: number; at: number }>();
  private gpus: EnergyStatus['gpus'] = [];
  /** The requests in flight machine-wide, and when the oldest started. */
  private readonly inFlight = new InFlightStarts();
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly opts: EnergyMeterOptions) {
    this.now = opts.now ?? Date.now;
    this.names = opts.upstreams.map((u) => u.name);
    this.prices = pricesByUpstream(opts.settings, opts.upstreams);
    this.window = new EnergyWindow(anyPrice(opts.settings, opts.upstreams));
    const counter = (name: string) => {
      const d = ENERGY_METRICS.find((m) => m.name === name)!;
      return new Counter({ name: d.name, help: d.help, labelNames: [...d.labels], registers: [opts.registry] });
    };
    this.energy = counter(ENERGY_METRIC);
    this.cost = counter(COST_METRIC);
    this.tokens = counter(ENERGY_TOKENS_METRIC);
    const w = WASTE_METRICS.find((m) => m.name === WASTED_GPU_SECONDS)!;
    this.wasted = new Counter({ name: w.name, help: w.help, labelNames: [...w.labels], registers: [opts.registry] });
  }

  ingest(batch: JudgedBatch): void {
    const now = this.now();
    if (batch.inFlightByModel) {
      let n = 0;
      for (const v of batch.inFlightByModel.values()) n += v;
      this.inFlight.note(now, n, batch.records.filter((r) => r.modelAdmitted).map((r) => r.startedAt));
    }
    const rate = this.opts.settings.energyPrefillRate;
    batch.records.forEach((r, i) => {
      // A poll of the server's own paths (its /metrics, model list) is no model's work: it takes no share of energy.
      if (ABOUT_SERVER_ROUTES.has(r.route)) return;
      const verdicts = batch.verdicts[i];
      const good = verdicts !== null && verdicts !== undefined && verdicts.every((v) => v.good);
      // A wasted request's prompt counts from its body's size where no usage came (an abort, a refusal).
      const cause = wasteCauseOf(r);
      const input = cause !== null ? promptTokensOf(r, this.opts.settings.promptCharsPerToken) : r.inputTokensKnown ? r.inputTokens : 0;
      this.ledger.addWork({
        upstream: this.names[r.upstream] ?? '', model: batch.labels[i]!, startMs: r.startedAt, ttftMs: r.ttft >= 0 ? r.ttft * 1000 : null,
        endMs: r.e2e >= 0 ? r.startedAt + r.e2e * 1000 : now, prefillSeconds: rate > 0 ? input / rate : 0,
        outputTokens: r.outputTokens, goodOutputTokens: good ? r.outputTokens : 0, cause,
      });
    });
  }

  start(): void {
    this.timer = setInterval(() => this.tick(), 1000);
    this.timer.unref();
  }

  /** Reads the GPUs' energy, then counts every second the ledger can split. Called once a second. */
  tick(): void {
    const now = this.now();
    try {
      this.readGpus(this.opts.machine.read());
    } catch (err) {
      this.opts.log.warn({ err: (err as Error).message }, 'energy: reading the machine snapshot failed');
    }
    for (const share of this.ledger.settle(now, this.inFlight.oldest)) this.count(share);
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  status(): EnergyStatus {
    return {
      currency: anyPrice(this.opts.settings, this.opts.upstreams) ? this.opts.settings.currency : null,
      windowSeconds: WINDOW_MS / 1000, attributedThrough: this.window.through,
      models: this.window.models(), upstreams: this.window.upstreams(), gpus: this.gpus, series: this.window.series(),
    };
  }

  private readGpus(m: MachineState): void {
    // One upstream and no join rows: every GPU serves it (as the bottleneck verdict reads it, docs/bottleneck.md).
    const sole = this.names.length === 1 && (m.gpuEngines?.rows.length ?? 0) === 0 ? this.names : null;
    const gpus: EnergyStatus['gpus'] = [];
    for (const g of m.gpus) {
      if (g.energyJoules === null || g.energySource === null) continue;
      gpus.push({ gpu: String(g.index), source: g.energySource, joules: g.energyJoules });
      // The first span starts where the GPU's counter does, so its first joules are not lost.
      const last = this.gpuLast.get(g.index) ?? (g.energySince !== null ? { joules: 0, at: g.energySince } : null);
      if (last && !(g.energyJoules > last.joules && g.at > last.at)) {
        this.gpuLast.set(g.index, last);
        continue; // no new energy: the span waits for the next increase
      }
      if (last) this.ledger.addEnergy(String(g.index), g.upstreams.length > 0 ? g.upstreams : (sole ?? []), last.at, g.at, g.energyJoules - last.joules);
      this.gpuLast.set(g.index, { joules: g.energyJoules, at: g.at });
    }
    this.gpus = gpus;
  }

  private count(s: Share): void {
    const labels = { gen_ai_request_model: s.model, upstream: s.upstream };
    this.energy.inc({ ...labels, state: s.state }, s.joules);
    const prices = this.prices.get(s.upstream);
    let total = 0;
    if (prices) {
      for (const [kind, v] of Object.entries(costOf(prices, s.joules, s.gpuSeconds))) {
        this.cost.inc({ ...labels, kind, currency: this.opts.settings.currency }, v);
        total += v;
      }
    }
    if (s.state === 'busy') {
      this.tokens.inc({ ...labels, good: 'true' }, s.goodOutputTokens);
      this.tokens.inc({ ...labels, good: 'false' }, Math.max(0, s.outputTokens - s.goodOutputTokens));
    }
    if (s.cause !== null && s.state === 'busy') this.wasted.inc({ ...labels, cause: s.cause }, s.gpuSeconds);
    this.window.add(s, total);
  }
}
