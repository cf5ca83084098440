/**
 * The machine snapshot's name for each normalized engine family (aliases.ts, ENGINE_METRICS):
 * data, like the alias table. A reader of machine state reads `engine.kvCacheUsage`, never
 * the metric name; the compiler checks each name is a family, and
 * test/unit/collectors/machine-snapshot.test.ts that every family has exactly one field.
 */
import type { EngineMetricName } from './aliases.js';

/** Gauges and counters: one value per upstream (the engine's series already aggregated). */
export const ENGINE_FIELDS = {
  kvCacheUsage: 'infermeter_engine_kv_cache_usage_ratio',
  running: 'infermeter_engine_requests_running',
  waiting: 'infermeter_engine_requests_waiting',
  prefixCacheQueriesTotal: 'infermeter_engine_prefix_cache_queries_total',
  prefixCacheHitsTotal: 'infermeter_engine_prefix_cache_hits_total',
  /** The engine's own ratio since it started (or hits / queries of its counters). */
  prefixCacheHitRatio: 'infermeter_engine_prefix_cache_hit_ratio',
  preemptionsTotal: 'infermeter_engine_preemptions_total',
  recomputedPromptTokensTotal: 'infermeter_engine_recomputed_prompt_tokens_total',
  recomputedOutputTokensTotal: 'infermeter_engine_recomputed_output_tokens_total',
  promptTokensTotal: 'infermeter_engine_prompt_tokens_total',
  generationTokensTotal: 'infermeter_engine_generation_tokens_total',
  specDecodeDraftTokensTotal: 'infermeter_engine_spec_decode_draft_tokens_total',
  specDecodeAcceptedTokensTotal: 'infermeter_engine_spec_decode_accepted_tokens_total',
  specDecodeAcceptanceRatio: 'infermeter_engine_spec_decode_acceptance_ratio',
  loraAdaptersRunning: 'infermeter_engine_lora_adapters_running',
  loraAdaptersWaiting: 'infermeter_engine_lora_adapters_waiting',
} as const satisfies Record<string, EngineMetricName>;

/** Histograms, with the engine's own buckets. */
export const ENGINE_HISTOGRAM_FIELDS = {
  timeToFirstToken: 'infermeter_engine_time_to_first_token_seconds',
  interTokenLatency: 'infermeter_engine_inter_token_latency_seconds',
  requestDuration: 'infermeter_engine_request_duration_seconds',
  queueTime: 'infermeter_engine_queue_time_seconds',
  prefillTime: 'infermeter_engine_prefill_time_seconds',
  decodeTime: 'infermeter_engine_decode_time_seconds',
} as const satisfies Record<string, EngineMetricName>;

export type EngineField = keyof typeof ENGINE_FIELDS;
export type EngineHistogramField = keyof typeof ENGINE_HISTOGRAM_FIELDS;
