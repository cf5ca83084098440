/**
 * The attributed energy of the last 15 minutes in 10-second slots, for the status page: per
 * model its busy joules, cost and output tokens (all and good), per upstream its busy and idle
 * joules, GPU-seconds and cost. Windows end at the last second attributed, not at now, so the
 * ledger's wait for requests in flight never shows as a dip. Fixed size: models are bounded by
 * the model label, upstreams by the configuration.
 */
import type { Share } from './ledger.js';

export const SLOT_MS = 10_000;
/** The chart's reach, and how long a slot is kept. */
export const CHART_MS = 15 * 60_000;
/** The status page's per-model and per-upstream figures. */
export const WINDOW_MS = 5 * 60_000;

interface ModelSlot {
  joules: number;
  cost: number;
  outputTokens: number;
  goodOutputTokens: number;
}

interface UpstreamSlot {
  busyJoules: number;
  idleJoules: number;
  gpuSeconds: number;
  cost: number;
  idleCost: number;
}

interface Slot {
  models: Map<string, ModelSlot>;
  upstreams: Map<string, UpstreamSlot>;
}

/** One model's energy and cost over the window (seconds already attributed); per token: null when there was no token. */
export interface ModelEnergy {
  joules: number;
  outputTokens: number;
  goodOutputTokens: number;
  joulesPerOutputToken: number | null;
  joulesPerGoodOutputToken: number | null;
  /** null: no price is set. */
  cost: number | null;
  costPerMillionOutputTokens: number | null;
  costPerMillionGoodOutputTokens: number | null;
}

export interface UpstreamEnergy {
  upstream: string;
  busyJoules: number;
  idleJoules: number;
  /** Mean power of its GPUs over the window. */
  watts: number;
  gpuSeconds: number;
  /** null: no price is set. */
  cost: number | null;
  idleCost: number | null;
}

export class EnergyWindow {
  private readonly slots = new Map<number, Slot>();
  /** Unix ms of the end of the last second attributed; null: none yet. */
  through: number | null = null;
  /** The slot of the first second attributed: the chart starts there, as the page's other charts start when infermeter did. */
  private firstSlot: number | null = null;

  constructor(private readonly priced: boolean) {}

  add(s: Share, cost: number): void {
    const key = Math.floor(s.at / SLOT_MS);
    let slot = this.slots.get(key);
    if (!slot) {
      this.slots.set(key, (slot = { models: new Map(), upstreams: new Map() }));
      for (const k of this.slots.keys()) if (k < key - CHART_MS / SLOT_MS) this.slots.delete(k);
    }
    this.through = Math.max(this.through ?? -Infinity, s.at + 1000);
    this.firstSlot = Math.min(this.firstSlot ?? Infinity, key);
    let u = slot.upstreams.get(s.upstream);
    if (!u) slot.upstreams.set(s.upstream, (u = { busyJoules: 0, idleJoules: 0, gpuSeconds: 0, cost: 0, idleCost: 0 }));
    u.gpuSeconds += s.gpuSeconds;
    u.cost += cost;
    if (s.state === 'idle') {
      u.idleJoules += s.joules;
      u.idleCost += cost;
      return;
    }
    u.busyJoules += s.joules;
    let m = slot.models.get(s.model);
    if (!m) slot.models.set(s.model, (m = { joules: 0, cost: 0, outputTokens: 0, goodOutputTokens: 0 }));
    m.joules += s.joules;
    m.cost += cost;
    m.outputTokens += s.outputTokens;
    m.goodOutputTokens += s.goodOutputTokens;
  }

  /** Every model seen in the window, with its figures. */
  models(): Map<string, ModelEnergy> {
    const sums = new Map<string, ModelSlot>();
    for (const slot of this.inWindow(WINDOW_MS)) {
      for (const [model, m] of slot.models) {
        const s = sums.get(model) ?? { joules: 0, cost: 0, outputTokens: 0, goodOutputTokens: 0 };
        s.joules += m.joules;
        s.cost += m.cost;
        s.outputTokens += m.outputTokens;
        s.goodOutputTokens += m.goodOutputTokens;
        sums.set(model, s);
      }
    }
    return new Map([...sums].map(([model, s]) => [model, this.perToken(s)]));
  }

  upstreams(): UpstreamEnergy[] {
    const sums = new Map<string, UpstreamSlot>();
    for (const slot of this.inWindow(WINDOW_MS)) {
      for (const [name, u] of slot.upstreams) {
        const s = sums.get(name) ?? { busyJoules: 0, idleJoules: 0, gpuSeconds: 0, cost: 0, idleCost: 0 };
        s.busyJoules += u.busyJoules;
        s.idleJoules += u.idleJoules;
        s.gpuSeconds += u.gpuSeconds;
        s.cost += u.cost;
        s.idleCost += u.idleCost;
        sums.set(name, s);
      }
    }
    const seconds = this.windowSeconds(WINDOW_MS);
    return [...sums].sort((a, b) => a[0].localeCompare(b[0])).map(([upstream, s]) => ({
      upstream, busyJoules: s.busyJoules, idleJoules: s.idleJoules, watts: seconds > 0 ? (s.busyJoules + s.idleJoules) / seconds : 0, gpuSeconds: s.gpuSeconds,
      cost: this.priced ? s.cost : null, idleCost: this.priced ? s.idleCost : null,
    }));
  }

  /**
   * Joules per output token per model per slot over the chart's reach, from the first second
   * attributed on (null: no token in the slot): a daemon up for 2 minutes gets 2 minutes of
   * chart, not 13 empty ones before them.
   */
  series(): { start: number; stepMs: number; points: number; joulesPerOutputToken: Record<string, (number | null)[]> } {
    if (this.through === null) return { start: 0, stepMs: SLOT_MS, points: 0, joulesPerOutputToken: {} };
    const last = Math.floor((this.through - 1) / SLOT_MS);
    const first = Math.max(last - CHART_MS / SLOT_MS + 1, this.firstSlot ?? last);
    const out: Record<string, (number | null)[]> = {};
    for (let k = first; k <= last; k++) {
      for (const [model, m] of this.slots.get(k)?.models ?? []) {
        (out[model] ??= new Array<number | null>(last - first + 1).fill(null))[k - first] = m.outputTokens > 0 ? m.joules / m.outputTokens : null;
      }
    }
    return { start: first * SLOT_MS, stepMs: SLOT_MS, points: last - first + 1, joulesPerOutputToken: out };
  }

  private perToken(s: ModelSlot): ModelEnergy {
    const per = (v: number, n: number, scale = 1) => (n > 0 ? (v / n) * scale : null);
    return {
      joules: s.joules, outputTokens: s.outputTokens, goodOutputTokens: s.goodOutputTokens,
      joulesPerOutputToken: per(s.joules, s.outputTokens), joulesPerGoodOutputToken: per(s.joules, s.goodOutputTokens),
      cost: this.priced ? s.cost : null,
      costPerMillionOutputTokens: this.priced ? per(s.cost, s.outputTokens, 1e6) : null,
      costPerMillionGoodOutputTokens: this.priced ? per(s.cost, s.goodOutputTokens, 1e6) : null,
    };
  }

  private *inWindow(ms: number): Generator<Slot> {
    if (this.through === null) return;
    const last = Math.floor((this.through - 1) / SLOT_MS);
    for (let k = last - ms / SLOT_MS + 1; k <= last; k++) {
      const slot = this.slots.get(k);
      if (slot) yield slot;
    }
  }

  /** Seconds the window covers: from its first slot with data to the last second attributed. */
  private windowSeconds(ms: number): number {
    if (this.through === null) return 0;
    const last = Math.floor((this.through - 1) / SLOT_MS);
    const firstWith = [...this.slots.keys()].filter((k) => k > last - ms / SLOT_MS).sort((a, b) => a - b)[0];
    return firstWith === undefined ? 0 : (this.through - firstWith * SLOT_MS) / 1000;
  }
}
