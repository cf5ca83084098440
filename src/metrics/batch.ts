/**
 * What the metrics side hands every consumer once per batch: the decoded records, each one's
 * model label looked up once and its SLO verdicts judged once (docs/architecture.md: the record
 * is the proxy's; the labels and the verdicts are the metrics side's). No consumer labels or
 * judges a record again, so every view agrees on both.
 */
import type { RequestRecord } from '../record/record.js';
import type { RequestInput } from '../record/input.js';
import { judge, type Verdict } from '../slo/judge.js';
import type { SloConfig } from '../slo/config.js';

export interface JudgedBatch {
  readonly records: readonly RequestRecord[];
  /** Each record's model label (models.ts: the upstream's list or the allowlist, else `other`), by index. */
  readonly labels: readonly string[];
  /** Each record's SLO verdicts (slo/judge.ts), by index; null where nothing judges it. */
  readonly verdicts: readonly (Verdict[] | null)[];
  /** The machine's requests in flight, every proxy loop together. */
  readonly inFlight: number;
  /**
   * Generation requests in flight per model label, machine-wide. Absent while records wait for
   * the first model list (side/startup-buffer.ts): the labels would all read `other` then.
   */
  readonly inFlightByModel?: ReadonlyMap<string, number>;
  /** Streams in flight with no byte for --stall-after per model label, machine-wide (stream health); absent with inFlightByModel. */
  readonly silentByModel?: ReadonlyMap<string, number>;
  /** Requests in flight per upstream (index in the configured list), machine-wide, as the loops last reported (the waste ledger's engine-release check). */
  readonly inFlightByUpstream?: readonly number[];
  /**
   * Each record's request body and session (record/input.ts), by index: only while a reader of
   * prompt shapes is on, and read only by the prompt block hashing (metrics/prompt/blocks.ts),
   * which hands the bodies to its thread. Absent otherwise.
   */
  readonly inputs?: readonly (RequestInput | null)[];
}

/** The one place records are labelled and judged: the metrics side calls it once per batch. */
export function judgeBatch(
  records: readonly RequestRecord[],
  inFlight: number,
  slos: SloConfig,
  labelOf: (model: string) => string,
  inFlightByModel?: ReadonlyMap<string, number>,
  inputs?: readonly (RequestInput | null)[] | null,
): JudgedBatch {
  const labels = records.map((r) => labelOf(r.model));
  const verdicts = records.map((r, i) => judge(slos, labels[i]!, r));
  const batch: JudgedBatch = inFlightByModel ? { records, labels, verdicts, inFlight, inFlightByModel } : { records, labels, verdicts, inFlight };
  return inputs ? { ...batch, inputs } : batch;
}
