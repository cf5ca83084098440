/** Stream health's series (docs/stream-health.md); the catalog lists them with the rest. */
import type { MetricDef } from '../../lib/metric-def.js';

/** How a stream ended, exactly one per streamed generation request (docs/stream-health.md, "Endings"). */
export const STREAM_ENDINGS = ['complete', 'no_terminal_event', 'upstream_error', 'client_abort', 'stalled'] as const;
export type StreamEnding = (typeof STREAM_ENDINGS)[number];

/** Where a silence lies: before the first token, or the phase of the token that ended it. */
export const SILENCE_PHASES = ['before_first_token', 'reasoning', 'tool_call', 'content'] as const;
export type SilencePhase = (typeof SILENCE_PHASES)[number];

export const STREAM_METRICS = [
  { name: 'infermeter_stream_endings_total', type: 'counter', unit: '{request}', labels: ['gen_ai_request_model', 'api', 'ending'], source: 'proxy',
    help: 'Streamed generation requests by how the stream ended: complete (its terminal event came: [DONE], message_stop, response.completed/incomplete/failed), no_terminal_event (the upstream closed the stream cleanly without one; usage still counted from what was seen), upstream_error (an error status, an error event, a broken or refused connection), client_abort (the client went away), stalled (no byte from the upstream for --idle-timeout, or no headers for --headers-timeout).' },
  { name: 'infermeter_longest_silence_seconds', type: 'histogram', unit: 's', buckets: 'silence', labels: ['gen_ai_request_model', 'api', 'phase'], source: 'proxy',
    help: 'Each stream\'s longest silence by phase, one observation per phase the stream had: before_first_token (from the request to its first token, or to its end when none came), and the longest wait between tokens that ended in a reasoning, tool_call or content token.' },
  { name: 'infermeter_streams_silent', type: 'gauge', unit: '{request}', labels: ['gen_ai_request_model'], source: 'proxy',
    help: 'Streams in flight with no byte from the upstream for --stall-after (default 10s) or more, counted each second: queued or prefilling long, a tool call held back, or a stall that --idle-timeout will cut.' },
] as const satisfies readonly MetricDef[];
