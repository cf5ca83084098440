/**
 * The status page's slow-request table, read from the slow-request log that also serves
 * /debug/requests (trace/slow-log.ts): per model, its slowest requests by TTFT and by TPOT
 * and its latest failures, each request once, slowest TTFT first.
 */
import type { SlowEntry, SlowLog } from '../trace/slow-log.js';
import type { SlowRequest, SlowRequestProvider } from './status-json.js';

/** Rows the page shows at most (buildStatus cuts there too). */
const MAX_ROWS = 50;

export function slowLogProvider(log: SlowLog): SlowRequestProvider {
  return {
    slowRequests(): SlowRequest[] {
      const rows: SlowRequest[] = [];
      for (const m of log.snapshot().models) {
        const seen = new Set<SlowEntry>();
        for (const e of [...m.slowestTtft, ...m.slowestTpot, ...m.failed]) {
          if (seen.has(e)) continue;
          seen.add(e);
          rows.push(rowOf(m.model, e));
        }
      }
      rows.sort((a, b) => (b.ttft ?? -1) - (a.ttft ?? -1) || b.startedAt - a.startedAt);
      return rows.slice(0, MAX_ROWS);
    },
  };
}

function rowOf(model: string, e: SlowEntry): SlowRequest {
  return {
    model,
    startedAt: Date.parse(e.startedAt),
    outcome: e.outcome,
    ttft: e.ttftSeconds,
    tpot: e.tpotSeconds,
    e2e: e.e2eSeconds,
    inputTokens: e.inputTokens,
    outputTokens: e.outputTokens,
    inFlightAtStart: e.inFlightAtStart,
    traceId: e.traceId,
  };
}
