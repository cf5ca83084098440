/**
 * The waste part of /api/v1/status (schemas/status.schema.json, docs/waste.md): each model's
 * wasted tokens by cause since start and its effective goodput over the last minute, and each
 * upstream's aborts: how fast they reached it and when the engine let them go. Read from the
 * waste ledger (src/metrics/waste/ledger.ts).
 */
import type { WasteStatus } from '../../metrics/waste/ledger.js';
import type { WasteCause } from '../../metrics/waste/defs.js';

/** The metrics side's waste ledger, as the page reads it. */
export interface WasteProvider {
  status(): WasteStatus;
}

export interface ModelWasteStatus {
  /** Wasted tokens since start, by cause (docs/waste.md, "Causes"). */
  tokens: Record<WasteCause, { input: number; output: number }>;
  goodTokensPerSecond: number;
  outputTokensPerSecond: number;
  /** Good output tokens per output token over the last minute; null: no output. */
  effectiveGoodput: number | null;
}

export type AbortStatus = WasteStatus['upstreams'];

const round = (v: number | null) => (v === null || !Number.isFinite(v) ? null : Number(v.toPrecision(4)));

/** A model's row with its waste, when the ledger has any for it. */
export function modelWaste<M extends { model: string; waste?: ModelWasteStatus }>(m: M, status: WasteStatus | undefined): M {
  const w = status?.models.get(m.model);
  if (!w) return m;
  return { ...m, waste: { tokens: w.tokens, goodTokensPerSecond: round(w.goodTokensPerSecond)!, outputTokensPerSecond: round(w.outputTokensPerSecond)!, effectiveGoodput: round(w.effectiveGoodput) } };
}

export function abortDocument(s: WasteStatus): AbortStatus {
  return s.upstreams.map((u) => ({ ...u, propagationP99Seconds: round(u.propagationP99Seconds), lastReleaseSeconds: round(u.lastReleaseSeconds) }));
}
