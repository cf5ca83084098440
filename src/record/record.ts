/**
 * The one compact record the proxy hands to the metrics side per finished request.
 * Everything the exporters need is here; nothing here is a prompt, a completion or a secret.
 * The contract between the proxy and the metrics side: both import record/, neither the other
 * (docs/architecture.md).
 */
import type { ERRORS, ErrorCode } from '../lib/errors.js';
import type { WireInputs } from './input.js';

/**
 * Exactly one per request (DESIGN.md). `rejected`: infermeter itself refused the request
 * (413, smuggling). `worker_lost`: the proxy worker relaying it died (`--workers`); the
 * metrics side counts it from the starts that worker had reported.
 */
export const OUTCOMES = [
  'ok',
  'upstream_error',
  'stream_error',
  'client_abort',
  'upstream_timeout',
  'upstream_unreachable',
  'rejected',
  'worker_lost',
] as const;
export type Outcome = (typeof OUTCOMES)[number];

/**
 * The outcomes that mean the inference server failed the request: an error status or error
 * event, a stream that broke, no answer in time, no connection. The failure ratios (the
 * upstream-errors alert, the bottleneck verdict, the bench) count exactly these; a client
 * abort, a request infermeter refused and a lost proxy worker are not the server's failures.
 */
export const UPSTREAM_FAILURES = ['upstream_error', 'stream_error', 'upstream_timeout', 'upstream_unreachable'] as const satisfies readonly Outcome[];
export type UpstreamFailure = (typeof UPSTREAM_FAILURES)[number];
const UPSTREAM_FAILURE_SET: ReadonlySet<string> = new Set(UPSTREAM_FAILURES);

export function isUpstreamFailure(outcome: string): outcome is UpstreamFailure {
  return UPSTREAM_FAILURE_SET.has(outcome);
}

/** Where the output-token count came from. */
export const TOKEN_SOURCES = ['usage', 'chunks', 'none'] as const;
export type TokenSource = (typeof TOKEN_SOURCES)[number];

/** Why metering gave up on a request whose bytes were still relayed. */
export const METERING_FAILURES = ['invalid_json', 'invalid_body', 'encoded_body', 'oversized_event'] as const;
export type MeteringFailure = (typeof METERING_FAILURES)[number];

export interface RequestRecord {
  /** Bounded route name from the route table (never a raw path). */
  route: string;
  /** Index of the upstream it went to in the configured list (config.upstreams); -1: none (answered by infermeter). */
  upstream: number;
  /** gen_ai.operation.name: chat, text_completion, or the route's operation. */
  operation: string;
  /** Raw model name from the request body, truncated; the metrics side bounds it into a label. */
  model: string;
  outcome: Outcome;
  /** HTTP status sent to the client (0 when none was sent). */
  status: number;
  streamed: boolean;
  /** Seconds from t0; -1 when not observed. */
  ttft: number;
  ttfo: number;
  e2e: number;
  inputTokens: number;
  outputTokens: number;
  tokenSource: TokenSource;
  /** Gaps between consecutive token-bearing chunks, seconds. */
  chunkGaps: Float32Array | null;
  meteringFailure: MeteringFailure | null;
  /** Error type for OTLP `error.type`, null when ok. */
  errorType: string | null;
  /** Wall-clock start (Unix epoch milliseconds, fractional): t0 on the proxy loop. */
  startedAt: number;
  /** True when inputTokens came from the upstream's usage; false means unknown (inputTokens is 0). */
  inputTokensKnown: boolean;
  /**
   * Requests in flight on this proxy loop when this one arrived (itself included; generation
   * requests only, for a generation route), and generation requests (chat, completions) in
   * flight when its first token arrived (-1: no token). Per loop as encoded: under --workers
   * the metrics side (MetricsSide.ingestWire) adds the other loops' counts as reported by then
   * to the decoded record's figures, so from there on they are machine-wide.
   */
  inFlightAtStart: number;
  inFlightAtFirstToken: number;
  /** usage.prompt_tokens_details.cached_tokens and usage.completion_tokens_details.reasoning_tokens; -1 when not reported. */
  cachedInputTokens: number;
  reasoningTokens: number;
  /**
   * The request's tenant as the proxy saw it (a header value truncated, or a salted hash of the
   * key; never a key), not yet bounded: the metrics side bounds it into a label. Null: none.
   */
  tenant: string | null;
  /**
   * True when the proxy reported this request's model as it started (RecordSink.admitted):
   * the metrics side then counts it out of that model's requests in flight.
   */
  modelAdmitted: boolean;
  /** W3C trace context of the request's span (lowercase hex), null when tracing is off. */
  traceId: string | null;
  spanId: string | null;
  /** The incoming traceparent's span id, null for a root span. */
  parentSpanId: string | null;
  /** W3C trace-flags of the span (bit 0: sampled). */
  traceFlags: number;
  /** The response's own `model` (the first token event's, or the JSON body's), at most 128 bytes; null when unseen. */
  responseModel: string | null;
  /** The choices' distinct non-null finish_reason values, comma-joined (at most 8 of 32 bytes); null when none. */
  finishReasons: string | null;
  /** A stream whose terminal event came ([DONE], message_stop, response.completed / incomplete / failed). */
  terminal: boolean;
  /**
   * The longest silence of a stream by phase, seconds (-1: none in that phase): before its
   * first token (until it came, or until the stream ended without one), and the longest wait
   * between tokens that ended in a reasoning, a tool-call and a content token.
   */
  silenceFirst: number;
  silenceReasoning: number;
  silenceTool: number;
  silenceContent: number;
  /** Bytes of the request body the proxy read (generation routes; 0 otherwise): the prompt's size where no usage says its tokens. */
  requestBytes: number;
  /**
   * A client abort: seconds from the proxy seeing the client's connection close to its upstream
   * request aborted (the upstream connection destroyed). -1: no abort, or the request had not
   * been written upstream yet (nothing reached the engine).
   */
  abortPropagation: number;
}

/** The fields a record has before anything is measured: for records the proxy never metered. */
export const UNMEASURED = {
  ttft: -1, ttfo: -1, e2e: -1, inputTokens: 0, outputTokens: 0, tokenSource: 'none', chunkGaps: null, meteringFailure: null,
  inputTokensKnown: false, modelAdmitted: false, inFlightAtStart: 0, inFlightAtFirstToken: -1, cachedInputTokens: -1, reasoningTokens: -1,
  upstream: -1, tenant: null, traceId: null, spanId: null, parentSpanId: null, traceFlags: 0, responseModel: null, finishReasons: null,
  terminal: false, silenceFirst: -1, silenceReasoning: -1, silenceTool: -1, silenceContent: -1, requestBytes: 0, abortPropagation: -1,
} as const satisfies Partial<RequestRecord>;

/**
 * What crosses from one proxy loop to the metrics side, at most every 20 ms (FLUSH_MS): the records
 * finished since the last batch (record-codec.ts), the loop's requests in flight, and its
 * running count of requests started per route (index into ROUTE_LABELS), from which the
 * metrics side counts the requests of a worker that died before finishing them.
 */
export interface WireBatch {
  /** 0 for the proxy of a single process; a worker's id under --workers. */
  source: number;
  records: ArrayBuffer | null;
  inFlight: number;
  /** Of inFlight, the generation requests (chat, completions): the other loops' part of in_flight_le. */
  generationInFlight: number;
  startedByRoute: number[];
  /** Generation requests whose model the loop read since its last batch, per raw model name (null: none). */
  startedByModel: [string, number][] | null;
  /** Streams in flight with no byte for --stall-after, per raw model name, as last counted (at most once a second); null: none. */
  silentByModel?: [string, number][] | null;
  /** This loop's requests in flight per upstream (index in the configured list), as of the batch; absent: not reported. */
  upstreamsInFlight?: number[] | null;
  /** The records' request bodies, for the prompt block hashing (input.ts); null when none or nobody reads them. */
  inputs?: WireInputs | null;
}

/** TPOT per DESIGN.md: (E2E − TTFT) / (output_tokens − 1), only for completed streams with ≥ 2 tokens. */
export function tpotSeconds(r: RequestRecord): number {
  if (r.outcome !== 'ok' || !r.streamed || r.ttft < 0 || r.e2e < 0 || r.outputTokens < 2) return -1;
  return (r.e2e - r.ttft) / (r.outputTokens - 1);
}

/** Every outcome lib/errors.ts maps an error to is one of OUTCOMES (checked by the compiler). */
export type ErrorOutcomesAreOutcomes = (typeof ERRORS)[ErrorCode]['outcome'] extends Outcome ? true : never;
const errorOutcomesAreOutcomes: ErrorOutcomesAreOutcomes = true;
void errorOutcomesAreOutcomes;
