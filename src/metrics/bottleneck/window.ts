/**
 * Per model, the finished requests of the last signal window, kept compactly (a few numbers
 * each, at most MAX_ENTRIES per model, oldest dropped first) on the metrics side, fed from
 * the same records and SLO verdicts every exporter gets.
 */
import { isUpstreamFailure, tpotSeconds, type RequestRecord } from '../../record/record.js';
import type { Verdict } from '../../slo/judge.js';
import { mean, quantile } from './signals.js';

/** Upper bound per model: past it the window holds the newest requests only. */
export const MAX_ENTRIES = 4096;

interface Entry {
  at: number;
  failed: boolean;
  /** -1: not observed. */
  ttft: number;
  tpot: number;
  inFlightAtFirstToken: number;
  /** Per SLO name judged: good (true) or bad (false). */
  slo: Map<string, boolean> | null;
}

export interface WindowStats {
  requests: number;
  failed: number;
  ttft: number[];
  tpot: number[];
  /** TPOTs of requests that had at most LOW_CONCURRENCY generation requests in flight at their first token. */
  tpotAlone: number[];
  concurrencyMean: number | null;
  /** Worst SLO attainment (null: nothing judged). */
  sloAttainment: number | null;
}

/** A request with this many generation requests in flight (itself included) had the engine nearly to itself. */
export const LOW_CONCURRENCY = 2;

export class ModelWindow {
  private entries: Entry[] = [];
  lastSeen = 0;

  add(r: RequestRecord, verdicts: readonly Verdict[] | null, at: number): void {
    // Client aborts and refused requests say nothing about the engine's limits.
    if (r.outcome === 'client_abort' || r.outcome === 'rejected' || r.outcome === 'worker_lost') return;
    const ok = r.outcome === 'ok' && !r.meteringFailure;
    let slo: Map<string, boolean> | null = null;
    if (verdicts) {
      slo = new Map();
      for (const v of verdicts) slo.set(v.name, (slo.get(v.name) ?? true) && v.good);
    }
    this.entries.push({ at, failed: isUpstreamFailure(r.outcome), ttft: ok ? r.ttft : -1, tpot: ok ? tpotSeconds(r) : -1, inFlightAtFirstToken: r.inFlightAtFirstToken, slo });
    if (this.entries.length > MAX_ENTRIES) this.entries.splice(0, this.entries.length - MAX_ENTRIES);
    this.lastSeen = at;
  }

  /** Drops what is older than `from` (Unix ms). */
  prune(from: number): void {
    let i = 0;
    while (i < this.entries.length && this.entries[i]!.at < from) i++;
    if (i > 0) this.entries.splice(0, i);
  }

  stats(): WindowStats {
    const ttft: number[] = [];
    const tpot: number[] = [];
    const tpotAlone: number[] = [];
    const conc: number[] = [];
    const good = new Map<string, [number, number]>();
    let failed = 0;
    for (const e of this.entries) {
      if (e.failed) failed++;
      if (e.ttft >= 0) ttft.push(e.ttft);
      if (e.tpot >= 0) {
        tpot.push(e.tpot);
        if (e.inFlightAtFirstToken > 0 && e.inFlightAtFirstToken <= LOW_CONCURRENCY) tpotAlone.push(e.tpot);
      }
      if (e.inFlightAtFirstToken > 0) conc.push(e.inFlightAtFirstToken);
      for (const [name, ok] of e.slo ?? []) {
        const g = good.get(name) ?? [0, 0];
        g[0] += ok ? 1 : 0;
        g[1]++;
        good.set(name, g);
      }
    }
    let attainment: number | null = null;
    for (const [g, n] of good.values()) if (n > 0) attainment = Math.min(attainment ?? 1, g / n);
    const asc = (a: number, b: number) => a - b;
    return { requests: this.entries.length, failed, ttft: ttft.sort(asc), tpot: tpot.sort(asc), tpotAlone: tpotAlone.sort(asc), concurrencyMean: mean(conc), sloAttainment: attainment };
  }
}

export { quantile };
