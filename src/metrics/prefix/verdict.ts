/**
 * The prefix-cache verdict (docs/prefix-cache.md), in the bottleneck room's style: one row of
 * data per kind, with its summary and its advice for vLLM, SGLang and llama.cpp; the first
 * row whose test holds is the verdict (routing before size: prefix-aware routing costs no
 * memory, so where both hold it is the knob to turn first). Pure: it reads the three ratios of a model's window.
 * The thresholds are the regimes' measured figures with room on both sides (docs, "Verdict").
 */
import type { AdviceEngine } from '../bottleneck/rules.js';

export const PREFIX_VERDICTS = ['no_reuse', 'caching_off', 'cache_too_small', 'routing_scatters', 'delivering'] as const;
export type PrefixVerdictKind = (typeof PREFIX_VERDICTS)[number];

/** What a verdict reads: shares of prompt tokens, null where not known. */
export interface ReuseRatios {
  /** Modelled requests in the window. */
  requests: number;
  unbounded: number | null;
  engineSize: number | null;
  /** Reuse under prefix-affine routing over the same replicas (several replicas of the model only). */
  affine: number | null;
  engine: number | null;
  /** The engine's own word (vLLM's enable_prefix_caching); null: it does not say. */
  prefixCaching: boolean | null;
}

/** Fewer modelled requests than this in the window: no verdict. */
export const MIN_VERDICT_REQUESTS = 20;
/** Reuse the traffic holds below this: caching will not pay. */
export const NO_REUSE_BELOW = 0.1;
/** An engine reusing less than this of prompts that hold reuse has caching off. */
export const CACHING_OFF_BELOW = 0.02;
/** A gap of at least this (share of prompt tokens) between two models is "far above". */
export const FAR_ABOVE = 0.1;

interface Row {
  kind: PrefixVerdictKind;
  summary: string;
  test: (r: ReuseRatios) => boolean;
  advice: Record<AdviceEngine, string>;
}

const gap = (hi: number | null, lo: number | null) => (hi === null || lo === null ? 0 : hi - lo);

export const PREFIX_RULES: readonly Row[] = [
  {
    kind: 'no_reuse', summary: 'the traffic holds little to reuse: prompts rarely share a leading block; caching will not help',
    test: (r) => r.unbounded !== null && r.unbounded < NO_REUSE_BELOW,
    advice: {
      vllm: 'nothing to gain from prefix caching here; put shared instructions first in the prompt if there are any',
      sglang: 'nothing to gain from the radix cache here; put shared instructions first in the prompt if there are any',
      llamacpp: 'nothing to gain from prompt caching here; put shared instructions first in the prompt if there are any',
    },
  },
  {
    kind: 'caching_off', summary: 'the traffic reuses its prefixes and the engine does not: prefix caching is off',
    test: (r) => r.prefixCaching === false || (r.engine !== null && r.engine < CACHING_OFF_BELOW && (r.engineSize ?? r.unbounded ?? 0) >= NO_REUSE_BELOW),
    advice: {
      vllm: 'enable prefix caching: --enable-prefix-caching (V1 has it on unless --no-enable-prefix-caching)',
      sglang: 'enable the radix cache: drop --disable-radix-cache',
      llamacpp: 'keep prompts cached: --cache-prompt on (requests may send cache_prompt: true), and --cache-reuse N for shifted prefixes',
    },
  },
  {
    kind: 'routing_scatters', summary: 'prefix-affine routing over the same replicas would reuse far more than the routing in place: requests that share a prefix land on different replicas',
    test: (r) => r.affine !== null && r.engineSize !== null && gap(r.affine, r.engineSize) >= FAR_ABOVE,
    advice: {
      vllm: 'route by prefix: llm-d\'s prefix-aware scorer, Dynamo\'s KV-aware router, or session affinity in the gateway',
      sglang: 'route by prefix: the SGLang router (cache-aware policy), llm-d or Dynamo',
      llamacpp: 'route by prefix: pin a session or a shared system prompt to one server (consistent hashing on it in the gateway)',
    },
  },
  {
    kind: 'cache_too_small', summary: 'a cache of the engine\'s size reuses far less than the traffic holds: the KV cache evicts prefixes before they come back',
    test: (r) => r.engineSize !== null && gap(r.unbounded, r.engineSize) >= FAR_ABOVE,
    advice: {
      vllm: 'give the KV cache more room: a higher --gpu-memory-utilization, --kv-cache-dtype fp8, a smaller --max-model-len, or CPU offload (--kv-offloading-size / LMCache)',
      sglang: 'give the KV pool more room: a higher --mem-fraction-static, --kv-cache-dtype fp8_e5m2, a smaller --context-length, or hierarchical cache (--enable-hierarchical-cache)',
      llamacpp: 'give the context more room: a larger --ctx-size, a quantised KV cache (--cache-type-k/--cache-type-v q8_0), or fewer --parallel slots',
    },
  },
  {
    kind: 'delivering', summary: 'the engine reuses what a cache of its size allows',
    test: () => true,
    advice: {
      vllm: 'nothing to change for prefix reuse', sglang: 'nothing to change for prefix reuse', llamacpp: 'nothing to change for prefix reuse',
    },
  },
];

export interface PrefixVerdict {
  kind: PrefixVerdictKind;
  summary: string;
  /** The figures it read, as shares of prompt tokens. */
  evidence: ReuseRatios;
  /** The configured engine's advice first. */
  advice: { engine: AdviceEngine; text: string }[];
}

export function prefixVerdict(r: ReuseRatios, engine: string): PrefixVerdict | null {
  if (r.requests < MIN_VERDICT_REQUESTS || r.unbounded === null) return null;
  const row = PREFIX_RULES.find((x) => x.test(r))!;
  const engines = (Object.keys(row.advice) as AdviceEngine[]).sort((a, b) => Number(b === engine) - Number(a === engine));
  return { kind: row.kind, summary: row.summary, evidence: r, advice: engines.map((e) => ({ engine: e, text: row.advice[e] })) };
}
