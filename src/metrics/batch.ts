/**
 * What the metrics side hands every exporter once per batch: the decoded records, judged once
 * (docs/architecture.md: the record is the proxy's; the verdicts are the metrics side's).
 */
import type { RequestRecord } from '../record/record.js';
import type { Verdict } from '../slo/judge.js';

/** What the exporters ingest: decoded records, and the machine's requests in flight. */
export interface RecordBatch {
  records: RequestRecord[];
  inFlight: number;
  /** Generation requests in flight per model label, machine-wide (absent where no one counts them). */
  inFlightByModel?: ReadonlyMap<string, number>;
  /**
   * Each record's SLO verdicts (slo/judge.ts), by index: judged once by the metrics side for
   * every exporter. Absent: each consumer judges for itself.
   */
  verdicts?: (Verdict[] | null)[];
}
