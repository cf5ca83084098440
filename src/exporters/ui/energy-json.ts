/**
 * The energy part of /api/v1/status (schemas/status.schema.json, docs/energy.md): each model's
 * joules and cost per output token over the window, all tokens and good tokens; each upstream's
 * busy and idle energy; each GPU's energy counter and where it comes from; and the chart of
 * joules per output token per model. Read from the energy consumer (src/metrics/energy/meter.ts).
 */
import type { EnergyStatus } from '../../metrics/energy/meter.js';
import type { ModelEnergy, UpstreamEnergy } from '../../metrics/energy/window.js';

/** The metrics side's energy consumer, as the page reads it. */
export interface EnergyProvider {
  status(): EnergyStatus;
}

export type ModelEnergyStatus = ModelEnergy;

export interface EnergyDocument {
  /** null: no price is set (cost fields are null). */
  currency: string | null;
  windowSeconds: number;
  /** Unix ms through which seconds have been attributed (requests still in flight hold the ones after); null: none yet. */
  attributedThrough: number | null;
  upstreams: UpstreamEnergy[];
  gpus: EnergyStatus['gpus'];
  series: EnergyStatus['series'];
}

function round(v: number): number;
function round(v: number | null): number | null;
function round(v: number | null): number | null {
  return v === null || !Number.isFinite(v) ? null : Number(v.toPrecision(4));
}

/** A model's row with its energy, when the consumer has any for it. */
export function modelEnergy<M extends { model: string; energy?: ModelEnergyStatus }>(m: M, status: EnergyStatus | undefined): M {
  const e = status?.models.get(m.model);
  if (!e) return m;
  return {
    ...m,
    energy: {
      joules: round(e.joules), outputTokens: round(e.outputTokens), goodOutputTokens: round(e.goodOutputTokens),
      joulesPerOutputToken: round(e.joulesPerOutputToken), joulesPerGoodOutputToken: round(e.joulesPerGoodOutputToken),
      cost: round(e.cost), costPerMillionOutputTokens: round(e.costPerMillionOutputTokens), costPerMillionGoodOutputTokens: round(e.costPerMillionGoodOutputTokens),
    },
  };
}

export function energyDocument(s: EnergyStatus): EnergyDocument {
  const series: EnergyStatus['series'] = { ...s.series, joulesPerOutputToken: {} };
  for (const [model, xs] of Object.entries(s.series.joulesPerOutputToken)) series.joulesPerOutputToken[model] = xs.map((v) => round(v));
  return {
    currency: s.currency, windowSeconds: s.windowSeconds, attributedThrough: s.attributedThrough,
    upstreams: s.upstreams.map((u) => ({
      upstream: u.upstream, busyJoules: round(u.busyJoules), idleJoules: round(u.idleJoules), watts: round(u.watts), gpuSeconds: round(u.gpuSeconds),
      cost: round(u.cost), idleCost: round(u.idleCost),
    })),
    gpus: s.gpus.map((g) => ({ ...g, joules: round(g.joules) })),
    series,
  };
}
