/**
 * The replay's part of bench.json (schemas/bench-report.schema.json, `replay`): the traces
 * replayed, how prompts were sized, and the recorded run beside the replayed one. Types only:
 * report.ts holds them, the replay's files fill them.
 */
import type { ApiName } from '../../record/routes.js';
import type { BenchSlo, Distribution, SloResult } from '../stats.js';
import type { Calibration } from './calibrate.js';
import type { ReuseFigure, TraceStats } from './stats.js';

/** What a replayed request replays: its trace line and what that line recorded. */
export interface ReplaySampleInfo {
  /** Position of the trace file in --replay, and the 1-based line in it. */
  file: number;
  line: number;
  /** Seconds after the replay started that it was due (the recorded arrival over --replay-speed). */
  scheduled: number;
  api: ApiName;
  /** The model asked for (after --replay-model). */
  model: string | null;
  stream: boolean;
  /** Recorded input_length and output_length. */
  inputLength: number;
  outputLength: number;
  /** The engine's usage of cached prompt tokens for this request; null when not reported. */
  cachedTokens: number | null;
  /** The line's cached_input_tokens; null when it recorded none. */
  recordedCachedTokens: number | null;
}

export interface ReplayReport {
  files: TraceStats['files'];
  speed: number;
  /** --replay-model: recorded model → the model asked for (`*`: every model). */
  models: Record<string, string>;
  /** How the target's tokens were measured per API and model; null: not calibrated (a token per word). */
  calibration: Calibration[] | null;
  /** Whether the recorded output length was forced (ignore_eos); when not, why. */
  ignoreEos: boolean;
  ignoreEosNote: string | null;
  notes: string[];
  /** The merged trace's arrival span as recorded, seconds. */
  recordedSpanSeconds: number;
  recorded: ReplaySide;
  replayed: ReplaySide;
  inputLength: LengthAgreement;
  outputLength: LengthAgreement;
  /** Cached prompt tokens request by request, where both runs' usage reported them. */
  cachedTokens: CachedAgreement;
  /** Seconds each request was sent after it was due (the client's own lateness). */
  sendLag: Distribution;
  /** Prefix reuse the trace's hash ids allow (trace stats' figure). */
  reuse: ReuseFigure[];
}

export interface ReplaySide {
  requests: number;
  ok: number;
  /** (requests − 1) / first to last arrival (recorded) or send (replayed); null for one request. */
  arrivalRate: number | null;
  /** ok requests / first arrival to last finish; null when the finishes are not known. */
  requestsPerSecond: number | null;
  /** Of ok requests: the engine's usage (recorded lengths, replayed usage). */
  inputTokens: Distribution;
  outputTokens: Distribution;
  ttft: Distribution;
  tpot: Distribution;
  e2e: Distribution;
  slo: Partial<Record<BenchSlo, SloResult>>;
  /** Prompt tokens the engine found in its prefix cache / prompt tokens; null when unknown. */
  prefixCacheHitRatio: number | null;
  prefixCacheFrom: string | null;
}

/**
 * The engine's cached prompt tokens, recorded and replayed, over the same requests: those ok
 * in the replay whose line and whose replayed usage both report them. The sides' ratios cover
 * what each side reports (a recorder's lines of one API may carry none while the engine's
 * counters count every request); this compares like with like.
 */
export interface CachedAgreement {
  compared: number;
  /** Of those requests: recorded prompt tokens, then cached ones as recorded and as replayed. */
  promptTokens: number;
  recorded: number;
  replayed: number;
  /** Requests whose replayed cached tokens equal the recorded ones. */
  exact: number;
}

export interface LengthAgreement {
  /** Requests compared: ok, with the engine's usage. */
  compared: number;
  exact: number;
  /** Replayed minus recorded, tokens. */
  tokens: Distribution;
  /** (replayed − recorded) / recorded. */
  relative: Distribution;
}
