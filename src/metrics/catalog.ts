/**
 * The catalog: every metric infermeter exports, in one table. README's metrics table,
 * the dashboards and the alert rules follow from it (a test keeps README in step).
 * Collector-owned families (GPU columns, engine aliases) come from their own data tables
 * and are listed here so this stays the single list.
 */
import { GPU_METRICS } from '../collectors/gpu/columns.js';
import { ENGINE_METRICS } from '../collectors/engine/aliases.js';
import { HOST_METRICS } from '../collectors/host/metrics.js';
import { COLLECTOR_HEALTH_METRICS } from '../collectors/health-metrics.js';
import type { MetricDef } from '../lib/metric-def.js';
import { ENERGY_METRICS } from './energy/defs.js';
import { PREFIX_METRICS } from './prefix/defs.js';
import { STREAM_METRICS } from './streams/defs.js';
import { WASTE_METRICS } from './waste/defs.js';

/** Labels every per-request metric carries (OTel GenAI semantic conventions, Prometheus spelling). */
export const REQUEST_LABELS = ['gen_ai_operation_name', 'gen_ai_provider_name', 'gen_ai_request_model'] as const;

/** The tenant label (--tenant-from / --tenant-header): on counters when tenants are on, on histograms only with --tenant-histograms. */
export const TENANT_LABEL = 'tenant';
/** Only with more than one upstream (README: the label sets): which engine served the request ('none': answered by infermeter). */
export const UPSTREAM_LABEL = 'upstream';
/**
 * On the five latency histograms only: which generation API the request used (record/routes.ts
 * API_LABELS: chat_completions, completions, messages, responses). Messages and Responses streams
 * are `chat` operations, so without it their latencies land in the chat series.
 */
export const API_LABEL = 'api';

export const REQUEST_METRICS = [
  { name: 'gen_ai_server_time_to_first_token_seconds', type: 'histogram', unit: 's', buckets: 'ttft', labels: [...REQUEST_LABELS, API_LABEL, UPSTREAM_LABEL, TENANT_LABEL], source: 'proxy',
    help: 'Time to first token (TTFT): first chunk carrying a generated token of any kind (content, reasoning, tool call, text) minus the time the proxy received the request. ok streaming requests only.' },
  { name: 'infermeter_time_to_first_output_seconds', type: 'histogram', unit: 's', buckets: 'ttft', labels: [...REQUEST_LABELS, API_LABEL, UPSTREAM_LABEL, TENANT_LABEL], source: 'proxy',
    help: 'Time to first output (TTFO): first chunk with visible content, text or tool calls minus request receipt; differs from TTFT for reasoning models. ok streaming requests only.' },
  { name: 'gen_ai_server_time_per_output_token_seconds', type: 'histogram', unit: 's', buckets: 'tpot', labels: [...REQUEST_LABELS, API_LABEL, UPSTREAM_LABEL, TENANT_LABEL], source: 'proxy',
    help: 'Time per output token (TPOT): (E2E - TTFT) / (output_tokens - 1), for ok streaming requests with at least 2 output tokens.' },
  { name: 'gen_ai_server_request_duration_seconds', type: 'histogram', unit: 's', buckets: 'e2e', labels: [...REQUEST_LABELS, API_LABEL, UPSTREAM_LABEL, TENANT_LABEL], source: 'proxy',
    help: 'End-to-end latency (E2E): last byte of the upstream response minus request receipt. ok requests only.' },
  { name: 'infermeter_inter_chunk_latency_seconds', type: 'histogram', unit: 's', buckets: 'chunk', labels: [...REQUEST_LABELS, API_LABEL, UPSTREAM_LABEL, TENANT_LABEL], source: 'proxy',
    help: 'Gap between consecutive token-bearing chunks of a stream (a chunk may hold several tokens under speculative decoding).' },
  { name: 'gen_ai_client_token_usage', type: 'histogram', unit: '{token}', buckets: 'tokens', labels: [...REQUEST_LABELS, UPSTREAM_LABEL, 'gen_ai_token_type', TENANT_LABEL], source: 'proxy',
    help: 'Tokens per request, by gen_ai_token_type (input, output).' },
  { name: 'infermeter_requests_total', type: 'counter', unit: '{request}', labels: [...REQUEST_LABELS, UPSTREAM_LABEL, 'route', 'outcome', TENANT_LABEL], source: 'proxy',
    help: 'Requests forwarded, by route and outcome (exactly one outcome per request).' },
  { name: 'infermeter_tokens_total', type: 'counter', unit: '{token}', labels: [...REQUEST_LABELS, UPSTREAM_LABEL, 'gen_ai_token_type', TENANT_LABEL], source: 'proxy',
    help: 'Tokens of metered requests, partial streams included, by gen_ai_token_type: input, output, and where the server reports them cached_input (usage.prompt_tokens_details.cached_tokens, part of input) and reasoning (usage.completion_tokens_details.reasoning_tokens, part of output); rate() gives tokens/s.' },
  { name: 'infermeter_output_token_source_total', type: 'counter', unit: '{request}', labels: ['source'], source: 'proxy',
    help: 'Metered requests by where the output-token count came from: usage (the server said), chunks (counted token-bearing chunks, no usage available), none.' },
  { name: 'infermeter_metering_failures_total', type: 'counter', unit: '{request}', labels: ['reason'], source: 'proxy',
    help: 'Requests whose bytes were relayed unchanged but could not be metered (invalid JSON in the stream, compressed body, ...).' },
  { name: 'infermeter_requests_in_flight', type: 'gauge', unit: '{request}', labels: [], source: 'proxy',
    help: 'Requests being proxied right now.' },
  { name: 'infermeter_slo_requests_total', type: 'counter', unit: '{request}', labels: ['gen_ai_request_model', 'slo', 'result', TENANT_LABEL], source: 'slo',
    help: 'Finished generation requests judged against each SLO threshold that applies (result good or bad); slo is the SLO name, or <name>_prompt_le_<bound> for a prompt-class threshold.' },
  { name: 'infermeter_goodput_requests_total', type: 'counter', unit: '{request}', labels: ['gen_ai_request_model', TENANT_LABEL], source: 'slo',
    help: 'Finished generation requests that met every SLO that applies to them (goodput).' },
  { name: 'infermeter_slo_judged_requests_total', type: 'counter', unit: '{request}', labels: ['gen_ai_request_model', TENANT_LABEL], source: 'slo',
    help: 'Finished generation requests judged against SLOs; goodput ratio = goodput / judged.' },
  { name: 'infermeter_slo_threshold_seconds', type: 'gauge', unit: 's', labels: ['gen_ai_request_model', 'slo'], source: 'slo',
    help: 'Configured SLO thresholds, for dashboards.' },
] as const satisfies readonly MetricDef[];

/**
 * Latency by prompt length and by concurrency (issue 17): dedicated histograms beside the
 * semconv ones rather than two more labels on them. On the semconv histograms the labels
 * would multiply all 27 TTFT lines per model by 7 and every dashboard would have to sum them
 * away; here the classes cost 14 lines each and the semconv series stay exactly as the
 * conventions define them. Classic buckets only (no native histogram, no OTLP instrument).
 */
export const BREAKDOWN_METRICS = [
  { name: 'infermeter_time_to_first_token_by_prompt_seconds', type: 'histogram', unit: 's', buckets: 'ttft_by_prompt', labels: [...REQUEST_LABELS, UPSTREAM_LABEL, 'prompt_tokens_le', TENANT_LABEL], source: 'proxy',
    help: 'TTFT by prompt class: prompt_tokens_le is the upper bound of the class holding usage.prompt_tokens (--prompt-tokens-classes), or unknown. ok streaming requests only.' },
  { name: 'infermeter_time_to_first_output_by_prompt_seconds', type: 'histogram', unit: 's', buckets: 'ttft_by_prompt', labels: [...REQUEST_LABELS, UPSTREAM_LABEL, 'prompt_tokens_le', TENANT_LABEL], source: 'proxy',
    help: 'TTFO by prompt class (prompt_tokens_le as for the TTFT breakdown). ok streaming requests only.' },
  { name: 'infermeter_time_per_output_token_by_concurrency_seconds', type: 'histogram', unit: 's', buckets: 'tpot_by_concurrency', labels: [...REQUEST_LABELS, UPSTREAM_LABEL, 'in_flight_le', TENANT_LABEL], source: 'proxy',
    help: 'TPOT by concurrency: in_flight_le is the upper bound of the band (--in-flight-bands) holding the generation requests in flight on the machine when this one\'s first token arrived.' },
  { name: 'infermeter_inter_chunk_latency_by_concurrency_seconds', type: 'histogram', unit: 's', buckets: 'tpot_by_concurrency', labels: [...REQUEST_LABELS, UPSTREAM_LABEL, 'in_flight_le', TENANT_LABEL], source: 'proxy',
    help: 'Inter-chunk latency by concurrency band (in_flight_le as for the TPOT breakdown).' },
] as const satisfies readonly MetricDef[];

/** The config reload's result, named as Prometheus names its own (prometheus_config_last_reload_*). */
export const CONFIG_RELOAD_METRICS = [
  { name: 'infermeter_config_last_reload_successful', type: 'gauge', unit: '1', labels: [], source: 'process',
    help: '1 when the last config reload (SIGHUP, POST /-/reload) succeeded or none was asked for yet, 0 when it failed and the running config stayed.' },
  { name: 'infermeter_config_last_reload_success_timestamp_seconds', type: 'gauge', unit: 's', labels: [], source: 'process',
    help: 'Unix time the running config was loaded: the start, or the last successful reload.' },
] as const satisfies readonly MetricDef[];

/** The bottleneck verdict (src/metrics/bottleneck/, docs/bottleneck.md): one-hot per model, bounded by the model label. */
export const BOTTLENECK_METRICS = [
  { name: 'infermeter_bottleneck', type: 'gauge', unit: '1', labels: ['gen_ai_request_model', 'kind'], source: 'slo',
    help: 'What limits the model now, one-hot: 1 for the current kind (none, idle, queue, kv_cache, prefill, decode, gpu_throttle, upstream_errors, proxy, unknown), 0 for the others; re-judged every --bottleneck-interval over --bottleneck-window.' },
] as const satisfies readonly MetricDef[];

/** Headroom (src/metrics/headroom/, docs/headroom.md): two series per model label, absent while the estimate is unknown. */
export const HEADROOM_METRICS = [
  { name: 'infermeter_capacity_requests_per_second', type: 'gauge', unit: '{request}/s', labels: ['gen_ai_request_model'], source: 'slo',
    help: 'Estimated request rate at which the first of the model\'s P99 SLOs (TTFT, TPOT, E2E) would break at the current mix; re-estimated every --bottleneck-interval over --headroom-window; absent while unknown.' },
  { name: 'infermeter_load_ratio', type: 'gauge', unit: '1', labels: ['gen_ai_request_model'], source: 'slo',
    help: 'The model\'s current request rate over infermeter_capacity_requests_per_second: 1 is where its first P99 SLO breaks; absent while the capacity is unknown.' },
] as const satisfies readonly MetricDef[];

/** The workload trace (--workload-trace, docs/workload-trace.md): what it kept of the traffic, and whether it is still writing. */
export const WORKLOAD_TRACE_METRICS = [
  { name: 'infermeter_workload_trace_requests_total', type: 'counter', unit: '{request}', labels: ['result'], source: 'process',
    help: 'Finished generation requests the workload trace saw, by result: written, sampled (left out by --workload-trace-sample), busy (the prompt hashing could not keep up: sampled, never delayed), unreadable (a body whose prompt cannot be read), failed (the trace had stopped on a write error).' },
  { name: 'infermeter_workload_trace_kept_ratio', type: 'gauge', unit: '1', labels: [], source: 'process',
    help: 'Share of the requests seen since start that the workload trace wrote: written / all results.' },
  { name: 'infermeter_workload_trace_writing', type: 'gauge', unit: '1', labels: [], source: 'process',
    help: '1 while the workload trace is being written, 0 once a write failed (a full disk, a file size limit) and tracing stopped.' },
] as const satisfies readonly MetricDef[];

/** Every metric, request and collector families alike. */
export function catalog(): readonly MetricDef[] {
  return [...REQUEST_METRICS, ...BREAKDOWN_METRICS, ...BOTTLENECK_METRICS, ...HEADROOM_METRICS, ...ENERGY_METRICS, ...PREFIX_METRICS, ...STREAM_METRICS, ...WASTE_METRICS, ...COLLECTOR_HEALTH_METRICS, ...CONFIG_RELOAD_METRICS, ...WORKLOAD_TRACE_METRICS, ...GPU_METRICS, ...ENGINE_METRICS, ...HOST_METRICS];
}

export function metricDef(name: string): MetricDef {
  const d = catalog().find((m) => m.name === name);
  if (!d) throw new Error(`metric ${name} is not in the catalog`);
  return d;
}
