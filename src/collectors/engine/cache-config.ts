/**
 * The engine's KV cache as it reports it, for the prefix-cache model (docs/prefix-cache.md):
 * tokens per block, blocks, and whether prefix caching is on. Read from the same scrape as the
 * engine's series. Pure.
 *
 * - vLLM: `vllm:cache_config_info`, an info gauge whose labels carry `block_size`,
 *   `num_gpu_blocks` and `enable_prefix_caching` (V0 writes "None" before the engine decided).
 * - SGLang: the gauges `sglang:max_total_num_tokens` (the KV pool's size in tokens) and
 *   `sglang:page_size` (tokens per page; 1, its default, when absent). Its radix cache is on
 *   unless --disable-radix-cache, which it does not report: unknown.
 * - Others report none: the model blocks at --prefix-cache-block-size and knows no size.
 */
import type { Sample } from '../../lib/prom-text.js';

export interface EngineCacheConfig {
  /** Tokens per KV block (vLLM's block_size, SGLang's page_size); null: not reported. */
  readonly blockSize: number | null;
  /** KV-cache capacity in tokens (num_gpu_blocks × block_size, or max_total_num_tokens); null: not reported. */
  readonly tokens: number | null;
  /** null: the engine does not say. */
  readonly prefixCaching: boolean | null;
  /** Which series it came from. */
  readonly from: string;
}

function positive(v: string | number | undefined): number | null {
  const n = typeof v === 'number' ? v : v === undefined || v.trim() === '' ? NaN : Number(v);
  return Number.isFinite(n) && n > 0 ? n : null;
}

function bool(v: string | undefined): boolean | null {
  const s = v?.trim().toLowerCase();
  return s === 'true' ? true : s === 'false' ? false : null;
}

/** The engine's cache configuration from one scrape's samples; null when it reports none. */
export function cacheConfigOf(samples: readonly Sample[], engine: string): EngineCacheConfig | null {
  if (engine === 'vllm') {
    const info = samples.find((s) => s.name === 'vllm:cache_config_info');
    if (!info) return null;
    const blockSize = positive(info.labels['block_size']);
    const blocks = positive(info.labels['num_gpu_blocks']);
    return { blockSize, tokens: blockSize !== null && blocks !== null ? blockSize * blocks : null, prefixCaching: bool(info.labels['enable_prefix_caching']), from: 'vllm:cache_config_info' };
  }
  if (engine === 'sglang') {
    // One series per model (and per DP/TP rank on some versions): the pool of the first.
    const total = samples.find((s) => s.name === 'sglang:max_total_num_tokens');
    if (!total) return null;
    const page = samples.find((s) => s.name === 'sglang:page_size');
    return { blockSize: page ? positive(page.value) : 1, tokens: positive(total.value), prefixCaching: null, from: 'sglang:max_total_num_tokens' };
  }
  return null;
}
