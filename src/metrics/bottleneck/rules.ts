/**
 * The bottleneck rules, as data: one row per kind, checked in this order; the first whose
 * conditions hold names the limit. A row holds when every condition of at least one of its
 * alternatives holds (`when` is OR of ANDs). Each condition has an entry threshold and an
 * exit threshold: while a row is the current verdict its conditions are checked at the exit
 * threshold, so a signal hovering at the entry value does not flip the verdict (hysteresis;
 * judge.ts adds a confirmation count on top). docs/bottleneck.md prints this table.
 */
import type { SignalName } from './signals.js';

export const BOTTLENECK_KINDS = ['none', 'idle', 'queue', 'kv_cache', 'prefill', 'decode', 'gpu_throttle', 'upstream_errors', 'proxy', 'unknown'] as const;
export type BottleneckKind = (typeof BOTTLENECK_KINDS)[number];

export interface Condition {
  signal: SignalName;
  op: '>=' | '<=';
  enter: number;
  /** Looser than `enter`: the threshold while this row is the current verdict. */
  exit: number;
  /** A missing signal counts as holding (the evidence then says it was not available). */
  optional?: boolean;
}

/** Engines whose flags the advice names. */
export const ADVICE_ENGINES = ['vllm', 'sglang', 'llamacpp'] as const;
export type AdviceEngine = (typeof ADVICE_ENGINES)[number];

export interface Rule {
  kind: Exclude<BottleneckKind, 'none'>;
  /** One line: what the row means. */
  summary: string;
  when: readonly (readonly Condition[])[];
  /** More signals shown as evidence beside the conditions'. */
  evidence: readonly SignalName[];
  advice: Record<AdviceEngine, string>;
  /**
   * The prefix-caching knob, said before `advice`. Where the prefix-cache model runs
   * (--prefix-cache), its verdict replaces it: caching off, a cache too small, routing that
   * scatters prefixes, or no reuse to gain (judge.ts, adviceOf).
   */
  prefixAdvice?: Record<AdviceEngine, string>;
}

const c = (signal: SignalName, op: Condition['op'], enter: number, exit: number, optional = false): Condition => ({ signal, op, enter, exit, ...(optional ? { optional } : {}) });

/** Fewer finished requests than this in the window: no verdict but `unknown`. */
export const MIN_REQUESTS = 3;

/**
 * Latency targets used where the model has no SLO of that name, seconds: the ratio signals
 * ttftOverTarget and tpotOverTarget divide by them. Loose on purpose (an interactive chat
 * service is in trouble past them); set SLOs for a verdict that follows your own targets.
 */
export const FALLBACK_TARGETS = { ttft: 1, tpot: 0.1 } as const;

export const RULES: readonly Rule[] = [
  {
    // A model whose traffic stopped and one that never had any read alike (judge.ts switches to it at once).
    kind: 'idle', summary: 'idle: too few requests finished in the window to judge',
    when: [[c('requests', '<=', MIN_REQUESTS - 1, MIN_REQUESTS - 1)]], evidence: [],
    advice: { vllm: 'nothing to judge: send traffic, or widen --bottleneck-window', sglang: 'nothing to judge: send traffic, or widen --bottleneck-window', llamacpp: 'nothing to judge: send traffic, or widen --bottleneck-window' },
  },
  {
    kind: 'proxy', summary: 'infermeter\'s own proxy event loop lags: the proxy, not the engine, adds the latency',
    when: [[c('proxyLoopDelayP99', '>=', 0.1, 0.05), c('proxyLagShare', '>=', 0.5, 0.3)]], evidence: ['ttftP50', 'requestsPerSecond'],
    advice: {
      vllm: 'infermeter: run more proxy workers (--workers N), turn off tracing or --tenant-histograms; give the proxy its own cores',
      sglang: 'infermeter: run more proxy workers (--workers N), turn off tracing or --tenant-histograms; give the proxy its own cores',
      llamacpp: 'infermeter: run more proxy workers (--workers N), turn off tracing or --tenant-histograms; give the proxy its own cores',
    },
  },
  {
    kind: 'upstream_errors', summary: 'errors or timeouts dominate the outcomes',
    when: [[c('failureRatio', '>=', 0.2, 0.1)]], evidence: ['requests', 'requestsPerSecond'],
    advice: {
      vllm: 'read the engine log for the failing requests: prompt + max_tokens over --max-model-len answers 400, CUDA OOM needs a lower --gpu-memory-utilization or --max-num-seqs; raise infermeter --headers-timeout or --idle-timeout if the errors are timeouts',
      sglang: 'read the server log: prompts beyond --context-length are refused, OOM needs a lower --mem-fraction-static or --max-running-requests; raise infermeter --headers-timeout or --idle-timeout if the errors are timeouts',
      llamacpp: 'read the server log: prompts beyond a slot\'s share of --ctx-size are refused (ctx-size / --parallel each); raise infermeter --headers-timeout or --idle-timeout if the errors are timeouts',
    },
  },
  {
    kind: 'gpu_throttle', summary: 'the GPU is power- or thermally throttled, or its SM clock is well below its peak, while latency is over target',
    when: [
      [c('gpuPowerViolation', '>=', 0.1, 0.05), c('latencyOverTarget', '>=', 1, 0.9)],
      [c('gpuThermalViolation', '>=', 0.1, 0.05), c('latencyOverTarget', '>=', 1, 0.9)],
      [c('gpuSmClockRatio', '<=', 0.8, 0.9), c('gpuUtilization', '>=', 0.5, 0.4), c('latencyOverTarget', '>=', 1, 0.9)],
    ],
    evidence: ['gpuSmClockRatio', 'gpuUtilization'],
    advice: {
      vllm: 'not an engine flag: check cooling and the power cap (nvidia-smi -q -d PERFORMANCE,POWER shows the throttle reasons; nvidia-smi -pl sets the limit); meanwhile a lower --max-num-seqs draws less power per step',
      sglang: 'not an engine flag: check cooling and the power cap (nvidia-smi -q -d PERFORMANCE,POWER); meanwhile a lower --max-running-requests draws less power per step',
      llamacpp: 'not an engine flag: check cooling and the power cap (nvidia-smi -q -d PERFORMANCE,POWER); meanwhile fewer --parallel slots draw less power per step',
    },
  },
  {
    kind: 'kv_cache', summary: 'the KV cache is near full and the engine preempts, or requests wait while the cache is full',
    when: [
      [c('kvCacheUsage', '>=', 0.9, 0.8), c('preemptionsPerSecond', '>=', 0.01, 0.001)],
      [c('engineWaiting', '>=', 1, 0.5), c('kvCacheUsageMax', '>=', 0.95, 0.9)],
    ],
    evidence: ['kvCacheUsage', 'preemptionsPerSecond', 'engineRunning', 'engineWaiting', 'kvCacheUsageMax', 'ttftP99'],
    advice: {
      vllm: 'more KV space: raise --gpu-memory-utilization, --kv-cache-dtype fp8, --enable-prefix-caching, a lower --max-model-len, or --tensor-parallel-size 2; fewer preemptions: a lower --max-num-seqs',
      sglang: 'more KV space: raise --mem-fraction-static, --kv-cache-dtype fp8_e5m2, keep the radix cache on (no --disable-radix-cache), a lower --context-length, or --tp-size 2; fewer retractions: a lower --max-running-requests',
      llamacpp: 'more KV space: a larger --ctx-size, --cache-type-k q8_0 --cache-type-v q8_0 (with --flash-attn), fewer --parallel slots for the same --ctx-size',
    },
  },
  {
    kind: 'queue', summary: 'requests wait for a batch slot while the KV cache has room: the batch size limit binds',
    when: [[c('engineWaiting', '>=', 1, 0.5), c('kvCacheUsageMax', '<=', 0.9, 0.95), c('queueShare', '>=', 0.5, 0.3, true)]],
    evidence: ['engineRunning', 'queueTimeMean', 'ttftP99'],
    advice: {
      vllm: 'raise --max-num-seqs (the running batch is full while KV has room), and --max-num-batched-tokens if prefill chunks queue; more replicas if the GPU is busy',
      sglang: 'raise --max-running-requests, and --chunked-prefill-size / --max-prefill-tokens if prefill queues',
      llamacpp: 'raise --parallel (slots), with --ctx-size raised to keep each slot\'s context, and --cont-batching on',
    },
  },
  {
    kind: 'prefill', summary: 'TTFT is over target and made mostly of prefill time; the queue is short (long prompts, compute-bound)',
    when: [[c('ttftOverTarget', '>=', 1, 0.9), c('prefillShare', '>=', 0.6, 0.5), c('engineWaiting', '<=', 1, 2)]],
    evidence: ['ttftP50', 'ttftP99', 'queueShare', 'gpuUtilization', 'prefixReuseTraffic', 'prefixReuseEngineSize', 'prefixReuseDelivered'],
    prefixAdvice: {
      vllm: '--enable-prefix-caching for shared prompt prefixes',
      sglang: 'keep the radix cache on (no --disable-radix-cache)',
      llamacpp: '--cache-reuse for shared prefixes',
    },
    advice: {
      vllm: '--enable-chunked-prefill with a larger --max-num-batched-tokens (fewer steps per prompt), shorter prompts, or disaggregated prefill (--kv-transfer-config)',
      sglang: 'a larger --chunked-prefill-size, shorter prompts, or prefill/decode disaggregation (--disaggregation-mode)',
      llamacpp: 'larger --batch-size / --ubatch-size, --flash-attn, shorter prompts',
    },
  },
  {
    kind: 'decode', summary: 'TPOT grows with the batch (and DRAM bandwidth is high where GPM shows it): decode is memory-bandwidth bound',
    when: [[c('tpotGrowth', '>=', 2, 1.6), c('gpuDramActive', '>=', 0.6, 0.5, true)]],
    evidence: ['tpotP50', 'tpotFloor', 'engineRunning', 'tpotOverTarget'],
    advice: {
      vllm: 'trade throughput for TPOT with a lower --max-num-seqs; or make each step cheaper: --quantization fp8, --kv-cache-dtype fp8, speculative decoding (--speculative-config), --tensor-parallel-size 2',
      sglang: 'a lower --max-running-requests; or cheaper steps: --quantization fp8, --kv-cache-dtype fp8_e5m2, --speculative-algorithm EAGLE, --tp-size 2',
      llamacpp: 'fewer --parallel slots; or cheaper steps: a smaller quantization of the GGUF, a draft model (--model-draft, --draft-max)',
    },
  },
];

/** A row's advice for one engine with no prefix-cache reading: its prefix-caching knob first, where it has one (docs print this). */
export function ruleAdvice(rule: Rule, e: AdviceEngine): string {
  return rule.prefixAdvice ? `${rule.prefixAdvice[e]}, ${rule.advice[e]}` : rule.advice[e];
}

/** What `none` and a no-rule `unknown` advise. */
export const NONE_ADVICE: Record<AdviceEngine, string> = {
  vllm: 'nothing to change: meeting its targets with room', sglang: 'nothing to change: meeting its targets with room', llamacpp: 'nothing to change: meeting its targets with room',
};
/** `unknown` asks for the engine's series when one of these is missing (judge.ts names only what is missing). */
export const ENGINE_SIGNALS = ['engineWaiting', 'engineRunning', 'kvCacheUsage', 'kvCacheUsageMax', 'preemptionsPerSecond', 'queueTimeMean', 'queueShare', 'prefillShare'] as const;
/** How each engine exports what ENGINE_SIGNALS read. */
export const ENGINE_METRICS_ADVICE: Record<AdviceEngine, string> = {
  vllm: 'the engine\'s series (--engine-metrics, the server\'s /metrics)',
  sglang: 'the engine\'s series (start SGLang with --enable-metrics and point --engine-metrics at it)',
  llamacpp: 'the engine\'s series (start llama-server with --metrics and point --engine-metrics at it)',
};
/** Where GPU readings come from: the daemon's collector, or bench's own sampler. */
export const GPU_ADVICE = { live: 'the GPU readings (nvidia-smi on PATH or --nvidia-smi, or --gpu-source dcgm-exporter)', bench: 'the GPU readings (run bench on the GPU machine, nvidia-smi on PATH or --nvidia-smi)' } as const;

/** `none` needs latency within target: latencyOverTarget below this (exit: this + 0.1). */
export const NONE_LATENCY = { enter: 1, exit: 1.1 } as const;
