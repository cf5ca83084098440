/**
 * The simulator's /metrics in vLLM's own names (V1, or the older V0 names), on a registry
 * of its own. Gauges and counters are read from the engine's state at scrape time, so what
 * a scrape shows is exactly what the scheduler holds; histograms are observed as events
 * happen. Names, HELP texts and buckets follow the captured scrapes in test/fixtures.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { EngineEvents, EngineState, FinishReason } from './engine.js';
import type { SimOptions } from './options.js';

type Format = SimOptions['metricsFormat'];
type Named = Record<Format, [name: string, help: string]>;

const same = (name: string, help: string): Named => ({ v1: [name, help], v0: [name, help] });

const GAUGES: readonly { names: Named; value: (s: EngineState) => number }[] = [
  { names: { v1: ['vllm:num_requests_running', 'Number of requests in model execution batches.'], v0: ['vllm:num_requests_running', 'Number of requests currently running on GPU.'] }, value: (s) => s.running },
  { names: same('vllm:num_requests_waiting', 'Number of requests waiting to be processed.'), value: (s) => s.waiting },
  { names: { v1: ['vllm:kv_cache_usage_perc', 'KV-cache usage. 1 means 100 percent usage.'], v0: ['vllm:gpu_cache_usage_perc', 'GPU KV-cache usage. 1 means 100 percent usage.'] }, value: (s) => s.kvCacheUsage },
];

const COUNTERS: readonly { names: Named; value: (s: EngineState) => number }[] = [
  { names: { v1: ['vllm:prefix_cache_queries_total', 'Prefix cache queries, in terms of number of queried tokens.'], v0: ['vllm:gpu_prefix_cache_queries_total', 'GPU prefix cache queries, in terms of number of queried tokens.'] }, value: (s) => s.prefixQueriedTokens },
  { names: { v1: ['vllm:prefix_cache_hits_total', 'Prefix cache hits, in terms of number of cached tokens.'], v0: ['vllm:gpu_prefix_cache_hits_total', 'GPU prefix cache hits, in terms of number of cached tokens.'] }, value: (s) => s.prefixHitTokens },
  { names: same('vllm:num_preemptions_total', 'Cumulative number of preemption from the engine.'), value: (s) => s.preemptions },
  { names: same('vllm:prompt_tokens_total', 'Number of prefill tokens processed.'), value: (s) => s.promptTokens },
  { names: same('vllm:generation_tokens_total', 'Number of generation tokens processed.'), value: (s) => s.generationTokens },
];

const TTFT_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560];
const ITL_BUCKETS = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80];
const E2E_BUCKETS = [0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680];

const HISTOGRAMS = {
  queued: { names: same('vllm:request_queue_time_seconds', 'Histogram of time spent in WAITING phase for request.'), buckets: E2E_BUCKETS },
  prefill: { names: same('vllm:request_prefill_time_seconds', 'Histogram of time spent in PREFILL phase for request.'), buckets: E2E_BUCKETS },
  decode: { names: same('vllm:request_decode_time_seconds', 'Histogram of time spent in DECODE phase for request.'), buckets: E2E_BUCKETS },
  firstToken: { names: same('vllm:time_to_first_token_seconds', 'Histogram of time to first token in seconds.'), buckets: TTFT_BUCKETS },
  interToken: { names: { v1: ['vllm:inter_token_latency_seconds', 'Histogram of inter-token latency in seconds.'], v0: ['vllm:time_per_output_token_seconds', 'Histogram of time per output token in seconds.'] }, buckets: ITL_BUCKETS },
  e2e: { names: { v1: ['vllm:e2e_request_latency_seconds', 'Histogram of e2e request latency in seconds.'], v0: ['vllm:e2e_request_latency_seconds', 'Histogram of end to end request latency in seconds.'] }, buckets: E2E_BUCKETS },
} as const;

const FINISH_REASONS: readonly FinishReason[] = ['stop', 'length', 'abort'];

export interface SimMetrics {
  registry: Registry;
  events: EngineEvents;
}

/** `state` is read at each scrape; the returned events feed the histograms. */
export function createSimMetrics(opts: SimOptions, state: () => EngineState): SimMetrics {
  const registry = new Registry();
  const format = opts.metricsFormat;
  const labels: Record<string, string> = format === 'v1' ? { engine: '0', model_name: opts.models[0]! } : { model_name: opts.models[0]! };
  const labelNames = Object.keys(labels);
  const registers = [registry];

  for (const g of GAUGES) {
    const [name, help] = g.names[format];
    new Gauge({ name, help, labelNames, registers, collect() { this.set(labels, g.value(state())); } });
  }
  for (const c of COUNTERS) {
    const [name, help] = c.names[format];
    const synced = counterSync(labels, (s) => c.value(s));
    new Counter({ name, help, labelNames, registers, collect() { synced(this, state()); } });
  }
  const success = FINISH_REASONS.map((reason) => counterSync({ ...labels, finished_reason: reason }, (s) => s.finished[reason]));
  new Counter({
    name: 'vllm:request_success_total', help: 'Count of successfully processed requests.', labelNames: [...labelNames, 'finished_reason'], registers,
    collect() { for (const sync of success) sync(this, state()); },
  });
  new Gauge({
    name: 'vllm:cache_config_info', help: 'Information of the LLMEngine CacheConfig', registers,
    labelNames: ['block_size', 'enable_prefix_caching', 'num_gpu_blocks', ...(format === 'v1' ? ['engine'] : [])],
  }).set({
    block_size: String(opts.blockSize), enable_prefix_caching: String(opts.prefixCaching), num_gpu_blocks: String(Math.floor(opts.kvCacheTokens / opts.blockSize)),
    ...(format === 'v1' ? { engine: '0' } : {}),
  }, 1);

  const hist = (h: (typeof HISTOGRAMS)[keyof typeof HISTOGRAMS]) => {
    const [name, help] = h.names[format];
    return new Histogram({ name, help, labelNames, buckets: [...h.buckets], registers }).labels(labels);
  };
  const queued = hist(HISTOGRAMS.queued);
  const prefill = hist(HISTOGRAMS.prefill);
  const decode = hist(HISTOGRAMS.decode);
  const firstToken = hist(HISTOGRAMS.firstToken);
  const interToken = hist(HISTOGRAMS.interToken);
  const e2e = hist(HISTOGRAMS.e2e);
  return {
    registry,
    events: {
      queued: (s) => queued.observe(s),
      prefill: (s) => prefill.observe(s),
      decode: (s) => decode.observe(s),
      firstToken: (s) => firstToken.observe(s),
      interToken: (s) => interToken.observe(s),
      // vLLM observes latency histograms for every finished request, aborted ones included.
      finished: (_reason, s) => e2e.observe(s),
    },
  };
}

/** Keeps a prom-client counter equal to a running total held elsewhere. */
function counterSync(labels: Record<string, string>, value: (s: EngineState) => number) {
  let reported = 0;
  return (counter: Counter, s: EngineState) => {
    const now = value(s);
    counter.inc(labels, now - reported);
    reported = now;
  };
}
