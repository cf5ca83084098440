/**
 * The slow-request log behind /debug/requests: per model label, the N slowest recent
 * requests by TTFT and by TPOT, and the N most recent failed ones, over a sliding window.
 * The window is cut into SLICES sub-windows, each keeping its own top N; a read merges the
 * slices still inside the window. Memory is bounded by models × 3 lists × SLICES × N entries
 * (the model label is already bounded), whatever the traffic. Entries hold timings, counts
 * and ids only: never a prompt, a completion or a header.
 */
import { tpotSeconds, type Outcome, type RequestRecord } from '../../record/record.js';
import type { SloName } from '../../slo/config.js';

const SLICES = 5;
/** A tenant is a label-like value; longer ones are cut (issue 17 bounds it into a label). */
const MAX_TENANT = 64;

export interface SlowEntry {
  startedAt: string;
  traceId: string | null;
  spanId: string | null;
  operation: string;
  route: string;
  outcome: Outcome;
  status: number;
  errorType: string | null;
  ttftSeconds: number | null;
  ttfoSeconds: number | null;
  tpotSeconds: number | null;
  e2eSeconds: number | null;
  inputTokens: number | null;
  outputTokens: number;
  /** Generation requests in flight at this proxy when this one arrived, itself included (machine-wide under --workers, the other workers' part ≤ 20 ms stale). */
  inFlightAtStart: number;
  tenant: string | null;
  /** SLOs this request missed. */
  sloBreached: SloName[];
}

interface Slice {
  start: number;
  ttft: { key: number; entry: SlowEntry }[];
  tpot: { key: number; entry: SlowEntry }[];
  failed: SlowEntry[];
  failedCount: number;
}

export interface ModelSnapshot {
  model: string;
  slowestTtft: SlowEntry[];
  slowestTpot: SlowEntry[];
  failed: SlowEntry[];
  /** Failed requests in the window, listed or not. */
  failedInWindow: number;
}

export interface SlowLogSnapshot {
  windowSeconds: number;
  perModel: number;
  models: ModelSnapshot[];
}

const secs = (v: number) => (v < 0 ? null : Math.round(v * 1e6) / 1e6);

export function entryOf(r: RequestRecord, breached: SloName[]): SlowEntry {
  return {
    startedAt: new Date(r.startedAt).toISOString(),
    traceId: r.traceId,
    spanId: r.spanId,
    operation: r.operation,
    route: r.route,
    outcome: r.outcome,
    status: r.status,
    errorType: r.errorType,
    ttftSeconds: secs(r.ttft),
    ttfoSeconds: secs(r.ttfo),
    tpotSeconds: secs(tpotSeconds(r)),
    e2eSeconds: secs(r.e2e),
    inputTokens: r.inputTokensKnown ? r.inputTokens : null,
    outputTokens: r.outputTokens,
    inFlightAtStart: r.inFlightAtStart,
    tenant: r.tenant === null ? null : r.tenant.slice(0, MAX_TENANT),
    sloBreached: breached,
  };
}

/** Keeps `list` as the `n` largest keys, largest first. */
function offer(list: { key: number; entry: SlowEntry }[], n: number, key: number, entry: () => SlowEntry): void {
  if (list.length === n && key <= list[n - 1]!.key) return;
  let i = list.length;
  while (i > 0 && list[i - 1]!.key < key) i--;
  list.splice(i, 0, { key, entry: entry() });
  if (list.length > n) list.pop();
}

export class SlowLog {
  private readonly byModel = new Map<string, Slice[]>();
  private readonly sliceMs: number;

  constructor(
    private readonly perModel: number,
    private readonly windowSeconds: number,
    private readonly now: () => number = Date.now,
  ) {
    this.sliceMs = Math.max(1, (windowSeconds * 1000) / SLICES);
  }

  add(r: RequestRecord, model: string, breached: SloName[]): void {
    const slice = this.current(model);
    const n = this.perModel;
    let entry: SlowEntry | null = null;
    const make = () => (entry ??= entryOf(r, breached));
    if (r.outcome === 'ok') {
      if (r.ttft >= 0) offer(slice.ttft, n, r.ttft, make);
      const tpot = tpotSeconds(r);
      if (tpot >= 0) offer(slice.tpot, n, tpot, make);
    } else if (r.outcome !== 'client_abort') {
      // A client leaving is not a failure of the service; it shows in the outcome counters.
      slice.failedCount++;
      slice.failed.unshift(make());
      if (slice.failed.length > n) slice.failed.pop();
    }
  }

  private current(model: string): Slice {
    const now = this.now();
    const start = now - (now % this.sliceMs);
    let slices = this.byModel.get(model);
    if (!slices) this.byModel.set(model, (slices = []));
    let s = slices[slices.length - 1];
    if (!s || s.start !== start) {
      slices.push((s = { start, ttft: [], tpot: [], failed: [], failedCount: 0 }));
      this.expire(slices, now);
    }
    return s;
  }

  private expire(slices: Slice[], now: number): void {
    const oldest = now - this.windowSeconds * 1000;
    while (slices.length > 0 && slices[0]!.start + this.sliceMs <= oldest) slices.shift();
  }

  /** The lists as they stand, models sorted by name; for /debug/requests and the status page. */
  snapshot(model?: string): SlowLogSnapshot {
    const now = this.now();
    const models: ModelSnapshot[] = [];
    for (const [name, slices] of [...this.byModel].sort(([a], [b]) => a.localeCompare(b))) {
      if (model !== undefined && name !== model) continue;
      this.expire(slices, now);
      if (slices.length === 0) {
        this.byModel.delete(name);
        continue;
      }
      const top = (pick: (s: Slice) => { key: number; entry: SlowEntry }[]) =>
        slices.flatMap(pick).sort((a, b) => b.key - a.key).slice(0, this.perModel).map((x) => x.entry);
      models.push({
        model: name,
        slowestTtft: top((s) => s.ttft),
        slowestTpot: top((s) => s.tpot),
        failed: slices.flatMap((s) => s.failed).sort((a, b) => b.startedAt.localeCompare(a.startedAt)).slice(0, this.perModel),
        failedInWindow: slices.reduce((n, s) => n + s.failedCount, 0),
      });
    }
    return { windowSeconds: this.windowSeconds, perModel: this.perModel, models };
  }
}
