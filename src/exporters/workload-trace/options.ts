/** What the workload trace reads of the configuration (docs/workload-trace.md). */
export interface WorkloadTraceOptions {
  /** The trace file; '' = off. */
  workloadTrace: string;
  /** Tokens per block of `hash_ids` (Mooncake's 512 by default). */
  workloadTraceBlockTokens: number;
  /** Bytes a file may reach before it is rotated. */
  workloadTraceMaxSize: number;
  /** Files kept: the one being written and the rotated ones. */
  workloadTraceMaxFiles: number;
  /** The share of requests traced (independent draws). */
  workloadTraceSample: number;
  /** Also send each line as an OTLP log record. */
  workloadTraceOtlp: boolean;
}
