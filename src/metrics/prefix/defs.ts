/** The prefix-cache model's series (docs/prefix-cache.md); the catalog lists them with the rest. */
import type { MetricDef } from '../../lib/metric-def.js';

export const PREFIX_METRICS = [
  { name: 'infermeter_prefix_reuse_ratio', type: 'gauge', unit: '1', labels: ['gen_ai_request_model', 'upstream', 'cache'], source: 'proxy',
    help: 'Share of prompt tokens reused over --prefix-cache-window, by cache: unbounded (in blocks an earlier request in the window had: what the traffic holds), engine_size (found in a modelled cache of the engine\'s KV size, least recently used out), engine (what the engine reported reusing: usage cached_tokens, else its prefix-cache counters); absent while not known (--prefix-cache).' },
  { name: 'infermeter_prefix_cache_requests_total', type: 'counter', unit: '{request}', labels: ['result'], source: 'process',
    help: 'Finished generation requests the prefix-cache model saw, by result: modelled, sampled (left out by --prefix-cache-sample), busy (the prompt hashing could not keep up: shed, never delayed), unreadable (a body whose prompt cannot be read).' },
] as const satisfies readonly MetricDef[];
