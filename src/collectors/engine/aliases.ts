/**
 * Engine metric aliases: data, not code (DESIGN.md, "Engine metric names change between
 * versions"). Each normalized `infermeter_engine_*` family lists, per engine kind, its
 * candidate sources in order of preference; the first candidate whose every source is in
 * the scrape wins, so when an engine serves both a new and a deprecated name (vLLM 0.10)
 * the new one is used and nothing is counted twice.
 *
 * A scalar candidate is a list of sample names whose values are added (llama.cpp counts
 * cached prompt tokens apart from processed ones). A histogram candidate names the engine's
 * histogram family (its `_bucket`/`_sum`/`_count` samples). Every label the engine adds
 * (vLLM V1 `engine`, `model_name`, SGLang ranks) is aggregated away; see
 * docs/collectors-engine-host.md for why `model_name` is not kept.
 */
import type { MetricDef } from '../../lib/metric-def.js';
import type { EngineKind } from '../../lib/engines.js';

export type Aggregate = 'sum' | 'mean';

export interface EngineMetricDef extends MetricDef {
  /** How series of one source are combined: counts add up, ratios are averaged. */
  aggregate: Aggregate;
}

/** `upstream`: which engine of the daemon's upstreams (its configured name), also with one. */
const LABELS = ['engine', 'upstream'] as const;

export const ENGINE_METRICS = [
  { name: 'infermeter_engine_kv_cache_usage_ratio', type: 'gauge', unit: '1', labels: LABELS, source: 'engine', aggregate: 'mean',
    help: 'Fraction of the engine\'s KV cache in use (0-1), as the engine reports it; averaged over data-parallel engines.' },
  { name: 'infermeter_engine_requests_running', type: 'gauge', unit: '{request}', labels: LABELS, source: 'engine', aggregate: 'sum',
    help: 'Requests the engine is running (in the current batch).' },
  { name: 'infermeter_engine_requests_waiting', type: 'gauge', unit: '{request}', labels: LABELS, source: 'engine', aggregate: 'sum',
    help: 'Requests queued in the engine, waiting for a batch slot.' },
  { name: 'infermeter_engine_prefix_cache_queries_total', type: 'counter', unit: '{token}', labels: LABELS, source: 'engine', aggregate: 'sum',
    help: 'Prompt tokens looked up in the engine\'s prefix cache.' },
  { name: 'infermeter_engine_prefix_cache_hits_total', type: 'counter', unit: '{token}', labels: LABELS, source: 'engine', aggregate: 'sum',
    help: 'Prompt tokens found in the engine\'s prefix cache.' },
  { name: 'infermeter_engine_prefix_cache_hit_ratio', type: 'gauge', unit: '1', labels: LABELS, source: 'engine', aggregate: 'mean',
    help: 'Prefix cache hits / queries since the engine started (or the engine\'s own hit-rate gauge when it exports no counters); use rate() of the two counters for a windowed ratio.' },
  { name: 'infermeter_engine_preemptions_total', type: 'counter', unit: '{preemption}', labels: LABELS, source: 'engine', aggregate: 'sum',
    help: 'Requests preempted (vLLM) or retracted (SGLang) by the engine to free KV cache.' },
  { name: 'infermeter_engine_recomputed_prompt_tokens_total', type: 'counter', unit: '{token}', labels: LABELS, source: 'engine', aggregate: 'sum',
    help: 'Prompt tokens of requests the engine preempted (retracted) to free KV cache, which it prefills again when they resume (SGLang num_retracted_input_tokens_total); the waste ledger counts them preempted.' },
  { name: 'infermeter_engine_recomputed_output_tokens_total', type: 'counter', unit: '{token}', labels: LABELS, source: 'engine', aggregate: 'sum',
    help: 'Output tokens of preempted (retracted) requests, recomputed when they resume (SGLang num_retracted_output_tokens_total).' },
  { name: 'infermeter_engine_prompt_tokens_total', type: 'counter', unit: '{token}', labels: LABELS, source: 'engine', aggregate: 'sum',
    help: 'Prompt (prefill) tokens of requests the engine processed, cached ones included.' },
  { name: 'infermeter_engine_generation_tokens_total', type: 'counter', unit: '{token}', labels: LABELS, source: 'engine', aggregate: 'sum',
    help: 'Tokens the engine generated.' },
  { name: 'infermeter_engine_time_to_first_token_seconds', type: 'histogram', unit: 's', labels: LABELS, source: 'engine', aggregate: 'sum',
    help: 'Engine-side time to first token, with the engine\'s own buckets (compare with gen_ai_server_time_to_first_token_seconds, the proxy\'s view).' },
  { name: 'infermeter_engine_inter_token_latency_seconds', type: 'histogram', unit: 's', labels: LABELS, source: 'engine', aggregate: 'sum',
    help: 'Engine-side gap between output tokens, with the engine\'s own buckets (compare with infermeter_inter_chunk_latency_seconds).' },
  { name: 'infermeter_engine_request_duration_seconds', type: 'histogram', unit: 's', labels: LABELS, source: 'engine', aggregate: 'sum',
    help: 'Engine-side end-to-end request latency, with the engine\'s own buckets (compare with gen_ai_server_request_duration_seconds).' },
  { name: 'infermeter_engine_spec_decode_draft_tokens_total', type: 'counter', unit: '{token}', labels: LABELS, source: 'engine', aggregate: 'sum',
    help: 'Speculative decoding: tokens the draft model (or n-gram, EAGLE, MTP head) proposed.' },
  { name: 'infermeter_engine_spec_decode_accepted_tokens_total', type: 'counter', unit: '{token}', labels: LABELS, source: 'engine', aggregate: 'sum',
    help: 'Speculative decoding: proposed tokens the target model accepted.' },
  { name: 'infermeter_engine_spec_decode_acceptance_ratio', type: 'gauge', unit: '1', labels: LABELS, source: 'engine', aggregate: 'mean',
    help: 'Speculative decoding: accepted / proposed tokens since the engine started (or the engine\'s own acceptance-rate gauge); use rate() of the two counters for a windowed ratio.' },
  { name: 'infermeter_engine_lora_adapters_running', type: 'gauge', unit: '{adapter}', labels: LABELS, source: 'engine', aggregate: 'sum',
    help: 'LoRA adapters that running requests use (vLLM: the names in lora_requests_info\'s running_lora_adapters label, counted; the names are not exported).' },
  { name: 'infermeter_engine_lora_adapters_waiting', type: 'gauge', unit: '{adapter}', labels: LABELS, source: 'engine', aggregate: 'sum',
    help: 'LoRA adapters that waiting requests ask for (vLLM: waiting_lora_adapters of lora_requests_info, counted).' },
  { name: 'infermeter_engine_queue_time_seconds', type: 'histogram', unit: 's', labels: LABELS, source: 'engine', aggregate: 'sum',
    help: 'Time requests spent waiting in the engine\'s queue before running, with the engine\'s own buckets.' },
  { name: 'infermeter_engine_prefill_time_seconds', type: 'histogram', unit: 's', labels: LABELS, source: 'engine', aggregate: 'sum',
    help: 'Time from a request\'s first scheduling to its first token in the engine (prefill), with the engine\'s own buckets.' },
  { name: 'infermeter_engine_decode_time_seconds', type: 'histogram', unit: 's', labels: LABELS, source: 'engine', aggregate: 'sum',
    help: 'Time from a request\'s first token to its last in the engine (decode), with the engine\'s own buckets.' },
] as const satisfies readonly EngineMetricDef[];

export type EngineMetricName = (typeof ENGINE_METRICS)[number]['name'];

/** Sample names whose values are added; all must be present for the candidate to apply. */
export type ScalarCandidate = readonly string[];
/** hits / queries of two normalized counters (computed after them). */
export interface RatioCandidate {
  ratioOf: readonly [EngineMetricName, EngineMetricName];
}
/**
 * The number of distinct names in a comma-separated label of an info metric, read from its
 * newest series (the highest value: vLLM sets lora_requests_info to the current time and leaves
 * older label sets behind).
 */
export interface LabelListCandidate {
  labelList: string;
  of: string;
}
export type Candidate = ScalarCandidate | RatioCandidate | LabelListCandidate | string;

export type AliasTable = Partial<Record<EngineMetricName, readonly Candidate[]>>;

const HIT_RATIO: RatioCandidate = { ratioOf: ['infermeter_engine_prefix_cache_hits_total', 'infermeter_engine_prefix_cache_queries_total'] };
const ACCEPTANCE: RatioCandidate = { ratioOf: ['infermeter_engine_spec_decode_accepted_tokens_total', 'infermeter_engine_spec_decode_draft_tokens_total'] };

/**
 * Per engine kind, the candidates for each normalized family, preferred first. A bare
 * string is one sample name (scalars) or one histogram family (histograms).
 */
export const ENGINE_ALIASES: Partial<Record<EngineKind, AliasTable>> = {
  vllm: {
    // vLLM 0.9 renamed gpu_cache_usage_perc → kv_cache_usage_perc (already 0-1 despite "perc").
    infermeter_engine_kv_cache_usage_ratio: ['vllm:kv_cache_usage_perc', 'vllm:gpu_cache_usage_perc'],
    infermeter_engine_requests_running: ['vllm:num_requests_running'],
    infermeter_engine_requests_waiting: ['vllm:num_requests_waiting'],
    // 0.9 deprecated gpu_prefix_cache_* (0.10 still serves both, HELP says DEPRECATED).
    infermeter_engine_prefix_cache_queries_total: ['vllm:prefix_cache_queries_total', 'vllm:gpu_prefix_cache_queries_total'],
    infermeter_engine_prefix_cache_hits_total: ['vllm:prefix_cache_hits_total', 'vllm:gpu_prefix_cache_hits_total'],
    // V0 exported only a hit-rate gauge.
    infermeter_engine_prefix_cache_hit_ratio: [HIT_RATIO, 'vllm:gpu_prefix_cache_hit_rate'],
    infermeter_engine_preemptions_total: ['vllm:num_preemptions_total'],
    infermeter_engine_prompt_tokens_total: ['vllm:prompt_tokens_total'],
    infermeter_engine_generation_tokens_total: ['vllm:generation_tokens_total'],
    infermeter_engine_time_to_first_token_seconds: ['vllm:time_to_first_token_seconds'],
    // time_per_output_token_seconds observed each inter-token gap; renamed in 0.11.
    infermeter_engine_inter_token_latency_seconds: ['vllm:inter_token_latency_seconds', 'vllm:time_per_output_token_seconds'],
    infermeter_engine_request_duration_seconds: ['vllm:e2e_request_latency_seconds'],
    infermeter_engine_queue_time_seconds: ['vllm:request_queue_time_seconds'],
    // First scheduled → first token, first token → last (0.10 V0 and V1 alike).
    infermeter_engine_prefill_time_seconds: ['vllm:request_prefill_time_seconds'],
    infermeter_engine_decode_time_seconds: ['vllm:request_decode_time_seconds'],
    // V1 (vllm/v1/spec_decode/metrics.py) and V0 use the same counter names; V0 also had a rate gauge.
    infermeter_engine_spec_decode_draft_tokens_total: ['vllm:spec_decode_num_draft_tokens_total'],
    infermeter_engine_spec_decode_accepted_tokens_total: ['vllm:spec_decode_num_accepted_tokens_total'],
    infermeter_engine_spec_decode_acceptance_ratio: [ACCEPTANCE, 'vllm:spec_decode_draft_acceptance_rate'],
    infermeter_engine_lora_adapters_running: [{ labelList: 'running_lora_adapters', of: 'vllm:lora_requests_info' }],
    infermeter_engine_lora_adapters_waiting: [{ labelList: 'waiting_lora_adapters', of: 'vllm:lora_requests_info' }],
  },
  sglang: {
    infermeter_engine_kv_cache_usage_ratio: ['sglang:token_usage'],
    infermeter_engine_requests_running: ['sglang:num_running_reqs'],
    infermeter_engine_requests_waiting: ['sglang:num_queue_reqs'],
    // Every prompt token is looked up in the radix cache.
    infermeter_engine_prefix_cache_queries_total: ['sglang:prompt_tokens_total'],
    infermeter_engine_prefix_cache_hits_total: ['sglang:cached_tokens_total'],
    // Older SGLang has only the cache_hit_rate gauge.
    infermeter_engine_prefix_cache_hit_ratio: [HIT_RATIO, 'sglang:cache_hit_rate'],
    infermeter_engine_preemptions_total: ['sglang:num_retracted_requests_total'],
    // Retraction frees a request's KV; on resume its prompt and the output so far are prefilled again.
    infermeter_engine_recomputed_prompt_tokens_total: ['sglang:num_retracted_input_tokens_total'],
    infermeter_engine_recomputed_output_tokens_total: ['sglang:num_retracted_output_tokens_total'],
    infermeter_engine_prompt_tokens_total: ['sglang:prompt_tokens_total'],
    infermeter_engine_generation_tokens_total: ['sglang:generation_tokens_total'],
    infermeter_engine_time_to_first_token_seconds: ['sglang:time_to_first_token_seconds'],
    infermeter_engine_inter_token_latency_seconds: ['sglang:inter_token_latency_seconds', 'sglang:time_per_output_token_seconds'],
    infermeter_engine_request_duration_seconds: ['sglang:e2e_request_latency_seconds'],
    infermeter_engine_queue_time_seconds: ['sglang:queue_time_seconds'],
    // SGLang exports speculative decoding as gauges only (no draft/accepted counters).
    infermeter_engine_spec_decode_acceptance_ratio: ['sglang:spec_accept_rate'],
  },
  tgi: {
    // TGI exports no KV-cache usage, prefix cache or preemption metrics.
    infermeter_engine_requests_running: ['tgi_batch_current_size'],
    infermeter_engine_requests_waiting: ['tgi_queue_size'],
    // Token counts exist only as per-request histograms; their _sum is the running total.
    infermeter_engine_prompt_tokens_total: ['tgi_request_input_length_sum'],
    infermeter_engine_generation_tokens_total: ['tgi_request_generated_tokens_sum'],
    infermeter_engine_request_duration_seconds: ['tgi_request_duration'],
    infermeter_engine_queue_time_seconds: ['tgi_request_queue_duration'],
  },
  llamacpp: {
    // kv_cache_usage_ratio was dropped from newer llama-server builds.
    infermeter_engine_kv_cache_usage_ratio: ['llamacpp:kv_cache_usage_ratio'],
    infermeter_engine_requests_running: ['llamacpp:requests_processing'],
    infermeter_engine_requests_waiting: ['llamacpp:requests_deferred'],
    // prompt_tokens_total excludes tokens reused from the cache; those are counted apart.
    infermeter_engine_prefix_cache_queries_total: [['llamacpp:prompt_tokens_total', 'llamacpp:prompt_tokens_cached_total']],
    infermeter_engine_prefix_cache_hits_total: ['llamacpp:prompt_tokens_cached_total'],
    infermeter_engine_prefix_cache_hit_ratio: [HIT_RATIO],
    infermeter_engine_prompt_tokens_total: [['llamacpp:prompt_tokens_total', 'llamacpp:prompt_tokens_cached_total'], 'llamacpp:prompt_tokens_total'],
    infermeter_engine_generation_tokens_total: ['llamacpp:tokens_predicted_total'],
  },
};

export function aliasTable(engine: EngineKind): AliasTable | undefined {
  return ENGINE_ALIASES[engine];
}

/**
 * infermeter's own `/metrics` read back: each normalized family under its own name, its
 * `engine` and `upstream` labels aggregated away as an engine's are. For a reader outside
 * the daemon pointed at its metrics listener (`infermeter bench --infermeter-metrics`).
 */
export const INFERMETER_ALIASES: AliasTable = Object.fromEntries(ENGINE_METRICS.map((d) => [d.name, [d.name]]));
