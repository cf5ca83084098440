/** The waste ledger's series (docs/waste.md); the catalog lists them with the rest. */
import type { MetricDef } from '../../lib/metric-def.js';

/**
 * Why work was spent on nothing (docs/waste.md, "Causes"): the first three per request, from its
 * record; `preempted` from the engine's counters of recomputed tokens, where it has them.
 */
export const WASTE_CAUSES = ['client_abort', 'queue_timeout', 'rejected', 'preempted'] as const;
export type WasteCause = (typeof WASTE_CAUSES)[number];
/** The causes a single request's record says (wasteCauseOf). */
export type RequestWasteCause = Exclude<WasteCause, 'preempted'>;

export const WASTED_TOKENS = 'infermeter_wasted_tokens_total';
export const WASTED_GPU_SECONDS = 'infermeter_wasted_gpu_seconds_total';

export const WASTE_METRICS = [
  { name: WASTED_TOKENS, type: 'counter', unit: '{token}', labels: ['gen_ai_request_model', 'upstream', 'cause', 'gen_ai_token_type'], source: 'proxy',
    help: 'Tokens the engine was given or made for nobody, by cause: client_abort (a client that left after its first token: its prompt, and its output to the last token the upstream sent, plus the tokens the engine made after that, from its generation counter at its next idle scrape: docs/waste.md), queue_timeout (a stream whose client left before its first token: its prompt, and any such tail), rejected (a prompt the engine refused with 429 or 503 after receiving it), preempted (prompt and output tokens the engine recomputes after preempting a request, from its own counters where it has them: SGLang; split between the models the upstream served in that interval). Input tokens are the usage\'s where the engine reported them, else the body\'s bytes at --prompt-chars-per-token.' },
  { name: WASTED_GPU_SECONDS, type: 'counter', unit: 's', labels: ['gen_ai_request_model', 'upstream', 'cause'], source: 'slo',
    help: 'GPU-seconds spent on wasted requests: their share of each GPU second as the energy attribution splits it (infermeter_energy_joules_total; --collector-gpu), by cause as infermeter_wasted_tokens_total.' },
  { name: 'infermeter_effective_goodput_ratio', type: 'gauge', unit: '1', labels: ['gen_ai_request_model'], source: 'slo',
    help: 'Over the last 60 s: output tokens of requests that completed and met every SLO that applies (completing is enough where none does), per output token the upstream sent for any request (aborted ones to their last token). 1 when every token served a good request; absent until a model has output.' },
  { name: 'infermeter_abort_propagation_seconds', type: 'histogram', unit: 's', buckets: 'abort', labels: ['upstream'], source: 'proxy',
    help: 'Per client abort that had reached its upstream: from the proxy seeing the client\'s connection close to its upstream request aborted (the connection to the engine closed).' },
  { name: 'infermeter_abort_engine_release_seconds', type: 'histogram', unit: 's', buckets: 'release', labels: ['upstream'], source: 'slo',
    help: 'From a client abort to the engine\'s first scrape (its own running and waiting gauges) holding no more requests than infermeter had in flight to it: the time the engine took to stop working on the aborted requests, read at its scrape interval. One observation per abort or burst of aborts.' },
] as const satisfies readonly MetricDef[];
