/**
 * The overview dashboard's prefix-cache row (docs/prefix-cache.md): per model and upstream,
 * the share of prompt tokens the traffic could reuse, that a cache of the engine's size would
 * find, and that the engine found, from infermeter_prefix_reuse_ratio (--prefix-cache).
 */
import type { RowSpec } from './dashboards-kit.js';
import { PREFIX_METRICS } from '../metrics/prefix/defs.js';

/** `sel`: the dashboard's instance and model selector. */
export function prefixRow(sel: string): RowSpec {
  const [ratio] = PREFIX_METRICS;
  return {
    title: 'Prefix cache',
    panels: [
      { title: 'Prefix reuse: the traffic, at the engine\'s size, the engine', unit: 'percentunit', w: 24, min: 0, max: 1,
        description: 'Share of prompt tokens reused over --prefix-cache-window, per model and upstream. unbounded: what the traffic holds (blocks a request in the window already had); engine_size: what a cache of the engine\'s KV size would find, least recently used out; engine: what the engine reported. unbounded far above engine_size: the cache is too small; engine near 0 while engine_size is not: caching is off. The verdict and its knob: /api/v1/status, models[].prefixCache. Empty without --prefix-cache.',
        targets: [{ expr: `${ratio.name}{${sel}}`, legend: '{{gen_ai_request_model}} ({{upstream}}) {{cache}}' }] },
    ],
  };
}
