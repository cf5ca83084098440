import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { ENGINE_ALIASES, ENGINE_METRICS, aliasTable } from '../../../src/collectors/engine/aliases.js';
import { engineEntry, normalizeScrape } from '../../../src/collectors/engine/collector.js';
import type { Snapshot } from '../../../src/collectors/engine/normalize.js';
import { resolveConfig } from '../../../src/config.js';
import { ENGINES, type EngineKind } from '../../../src/lib/engines.js';
import { CollectorError } from '../../../src/collectors/types.js';

const fixture = (name: string) => readFileSync(new URL(`../../../../test/fixtures/${name}`, import.meta.url), 'utf8');

function map(text: string, engine: EngineKind): Snapshot {
  return normalizeScrape(text, aliasTable(engine) ?? {}, engine);
}

/** Scalar families of a snapshot as name → value (histograms as { count, sum }). */
function flat(s: Snapshot): Record<string, number | { count: number; sum: number }> {
  const out: Record<string, number | { count: number; sum: number }> = {};
  for (const [name, values] of s) {
    if (values.length === 1) out[name.replace('infermeter_engine_', '')] = values[0]!.value;
    else {
      const pick = (suffix: string) => values.find((v) => v.metricName === `${name}_${suffix}`)!.value;
      out[name.replace('infermeter_engine_', '')] = { count: pick('count'), sum: pick('sum') };
    }
  }
  return out;
}

function buckets(s: Snapshot, name: string): [string, number][] {
  return (s.get(name as never) ?? []).filter((v) => v.metricName?.endsWith('_bucket')).map((v) => [v.labels['le']!, v.value]);
}

// Expected values read off each captured scrape by hand.
const CASES: { file: string; engine: EngineKind; expect: ReturnType<typeof flat> }[] = [
  { file: 'vllm-v0-metrics-0.10-cpu-full.prom', engine: 'vllm', expect: {
    kv_cache_usage_ratio: 0, // gpu_cache_usage_perc (V0 name)
    requests_running: 0,
    requests_waiting: 0,
    preemptions_total: 0,
    prompt_tokens_total: 43952,
    generation_tokens_total: 4874,
    time_to_first_token_seconds: { count: 69, sum: 4941.843970537186 },
    inter_token_latency_seconds: { count: 4805, sum: 662.8116002082825 }, // time_per_output_token_seconds
    request_duration_seconds: { count: 38, sum: 902.0056705474854 },
    queue_time_seconds: { count: 38, sum: 0.017765522003173828 },
    prefill_time_seconds: { count: 38, sum: 239.16777801513672 },
    decode_time_seconds: { count: 38, sum: 662.8201270103455 },
    lora_adapters_running: 0, // lora_requests_info with running_lora_adapters=""
    lora_adapters_waiting: 0,
  } },
  { file: 'vllm-v1-metrics-head40.prom', engine: 'vllm', expect: {
    kv_cache_usage_ratio: 0,
    requests_running: 0,
    requests_waiting: 0,
    prefix_cache_queries_total: 0,
    prefix_cache_hits_total: 0,
    // no hit ratio: no query yet
    preemptions_total: 0,
    prompt_tokens_total: 0,
    generation_tokens_total: 0,
  } },
  { file: 'vllm-v1-metrics-0.10.0-deprecated-names-excerpt.prom', engine: 'vllm', expect: {
    kv_cache_usage_ratio: 9.75010481363281e-6,
    prefix_cache_queries_total: 32, // the new name
    prefix_cache_hits_total: 0, // the excerpt has only the deprecated hits name
    prefix_cache_hit_ratio: 0,
  } },
  { file: 'sglang-metrics-docs-example.prom', engine: 'sglang', expect: {
    kv_cache_usage_ratio: 0.28,
    requests_running: 162,
    requests_waiting: 2826,
    prefix_cache_queries_total: 8.128902e6,
    prefix_cache_hit_ratio: 0.007507552643049313, // no cached_tokens_total here: the engine's gauge
    prompt_tokens_total: 8.128902e6,
    generation_tokens_total: 7.557572e6,
    time_to_first_token_seconds: { count: 11008, sum: 2.3518979474117756e6 },
    inter_token_latency_seconds: { count: 7.400757e6, sum: 866964.5791549598 },
    request_duration_seconds: { count: 11228, sum: 3.116093850019932e6 },
  } },
  { file: 'llama-server-metrics-busy.prom', engine: 'llamacpp', expect: {
    requests_running: 2,
    requests_waiting: 1,
    prefix_cache_queries_total: 136 + 125,
    prefix_cache_hits_total: 125,
    prefix_cache_hit_ratio: 125 / 261,
    prompt_tokens_total: 136 + 125,
    generation_tokens_total: 2431,
  } },
  { file: 'llama-server-metrics.prom', engine: 'llamacpp', expect: {
    requests_running: 0,
    requests_waiting: 0,
    prefix_cache_queries_total: 137 + 157,
    prefix_cache_hits_total: 157,
    prefix_cache_hit_ratio: 157 / 294,
    prompt_tokens_total: 137 + 157,
    generation_tokens_total: 4231,
  } },
  { file: 'vllm-v1-metrics-spec-decode-lora-reconstructed.prom', engine: 'vllm', expect: {
    requests_running: 3,
    requests_waiting: 1,
    spec_decode_draft_tokens_total: 3600,
    spec_decode_accepted_tokens_total: 2520,
    spec_decode_acceptance_ratio: 2520 / 3600,
    lora_adapters_running: 2, // the newest label set: sql-lora,chat-lora
    lora_adapters_waiting: 1,
  } },
  { file: 'sglang-metrics-spec-decode-reconstructed.prom', engine: 'sglang', expect: {
    requests_running: 8,
    requests_waiting: 4,
    spec_decode_acceptance_ratio: 0.6, // averaged over tensor-parallel ranks
  } },
  // A GPU exporter is valid Prometheus text with no engine metric in it.
  { file: 'nvidia-gpu-exporter-excerpt.prom', engine: 'vllm', expect: {} },
];

for (const c of CASES) {
  test(`maps ${c.file} (${c.engine})`, () => {
    assert.deepEqual(flat(map(fixture(c.file), c.engine)), c.expect);
  });
}

test('histograms keep the engine\'s own buckets (vLLM V0 TTFT)', () => {
  const s = map(fixture('vllm-v0-metrics-0.10-cpu-full.prom'), 'vllm');
  assert.deepEqual(buckets(s, 'infermeter_engine_time_to_first_token_seconds'), [
    ['0.001', 0], ['0.005', 0], ['0.01', 0], ['0.02', 0], ['0.04', 0], ['0.06', 0], ['0.08', 0], ['0.1', 0], ['0.25', 0],
    ['0.5', 0], ['0.75', 1], ['1', 4], ['2.5', 16], ['5', 31], ['7.5', 31], ['10', 36], ['20', 36], ['40', 40], ['80', 48],
    ['160', 56], ['640', 69], ['2560', 69], ['+Inf', 69],
  ]);
  const ttft = s.get('infermeter_engine_time_to_first_token_seconds')!;
  assert.ok(ttft.every((v) => v.labels['engine'] === 'vllm' && !('model_name' in v.labels)));
});

test('histograms keep the engine\'s own buckets (SGLang E2E)', () => {
  const s = map(fixture('sglang-metrics-docs-example.prom'), 'sglang');
  assert.deepEqual(buckets(s, 'infermeter_engine_request_duration_seconds'), [
    ['0.3', 0], ['0.5', 6], ['0.8', 6], ['1', 6], ['1.5', 6], ['2', 6], ['2.5', 6], ['5', 7], ['10', 10], ['15', 11],
    ['20', 14], ['30', 247], ['40', 486], ['50', 845], ['60', 1513], ['+Inf', 11228],
  ]);
});

test('vLLM 0.10 serving old and new names: the new one wins, nothing is counted twice', () => {
  const text = [
    'vllm:gpu_prefix_cache_queries_total{engine="0",model_name="m"} 100.0',
    'vllm:gpu_prefix_cache_hits_total{engine="0",model_name="m"} 40.0',
    'vllm:prefix_cache_queries_total{engine="0",model_name="m"} 100.0',
    'vllm:prefix_cache_hits_total{engine="0",model_name="m"} 40.0',
    'vllm:gpu_cache_usage_perc{engine="0",model_name="m"} 0.5',
    'vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.5',
    'vllm:time_per_output_token_seconds_bucket{engine="0",le="0.1",model_name="m"} 3.0',
    'vllm:time_per_output_token_seconds_bucket{engine="0",le="+Inf",model_name="m"} 4.0',
    'vllm:time_per_output_token_seconds_count{engine="0",model_name="m"} 4.0',
    'vllm:time_per_output_token_seconds_sum{engine="0",model_name="m"} 0.5',
    'vllm:inter_token_latency_seconds_bucket{engine="0",le="0.1",model_name="m"} 3.0',
    'vllm:inter_token_latency_seconds_bucket{engine="0",le="+Inf",model_name="m"} 4.0',
    'vllm:inter_token_latency_seconds_count{engine="0",model_name="m"} 4.0',
    'vllm:inter_token_latency_seconds_sum{engine="0",model_name="m"} 0.5',
    'vllm:prefix_cache_queries_created{engine="0",model_name="m"} 1.7e9',
  ].join('\n');
  assert.deepEqual(flat(map(text, 'vllm')), {
    kv_cache_usage_ratio: 0.5,
    prefix_cache_queries_total: 100,
    prefix_cache_hits_total: 40,
    prefix_cache_hit_ratio: 0.4,
    inter_token_latency_seconds: { count: 4, sum: 0.5 },
  });
});

test('vLLM V1 data-parallel engines: counts and histograms summed over `engine`, KV usage averaged', () => {
  const text = [
    'vllm:num_requests_running{engine="0",model_name="m"} 3.0',
    'vllm:num_requests_running{engine="1",model_name="m"} 5.0',
    'vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.2',
    'vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.6',
    'vllm:generation_tokens_total{engine="0",model_name="m"} 10.0',
    'vllm:generation_tokens_total{engine="1",model_name="m"} 32.0',
    'vllm:generation_tokens_created{engine="0",model_name="m"} 1.7e9',
    'vllm:e2e_request_latency_seconds_bucket{engine="0",le="1.0",model_name="m"} 1.0',
    'vllm:e2e_request_latency_seconds_bucket{engine="1",le="1.0",model_name="m"} 2.0',
    'vllm:e2e_request_latency_seconds_bucket{engine="0",le="+Inf",model_name="m"} 2.0',
    'vllm:e2e_request_latency_seconds_bucket{engine="1",le="+Inf",model_name="m"} 5.0',
    'vllm:e2e_request_latency_seconds_count{engine="0",model_name="m"} 2.0',
    'vllm:e2e_request_latency_seconds_count{engine="1",model_name="m"} 5.0',
    'vllm:e2e_request_latency_seconds_sum{engine="0",model_name="m"} 1.5',
    'vllm:e2e_request_latency_seconds_sum{engine="1",model_name="m"} 6.0',
  ].join('\n');
  const s = map(text, 'vllm');
  const f = flat(s);
  assert.equal(f['requests_running'], 8);
  assert.ok(Math.abs((f['kv_cache_usage_ratio'] as number) - 0.4) < 1e-12);
  assert.equal(f['generation_tokens_total'], 42);
  assert.deepEqual(f['request_duration_seconds'], { count: 7, sum: 7.5 });
  assert.deepEqual(buckets(s, 'infermeter_engine_request_duration_seconds'), [['1', 3], ['+Inf', 7]]);
});

test('SGLang with cached_tokens_total and retractions: hit ratio from the counters', () => {
  const text = [
    'sglang:prompt_tokens_total{model_name="m",tp_rank="0"} 1000.0',
    'sglang:cached_tokens_total{model_name="m",tp_rank="0"} 250.0',
    'sglang:cache_hit_rate{model_name="m",tp_rank="0"} 0.9',
    'sglang:num_retracted_requests_total{model_name="m",tp_rank="0"} 3.0',
    // SGLang's retraction token counters (its metrics collector, increment_retracted_reqs), summed over ranks.
    'sglang:num_retracted_input_tokens_total{model_name="m",tp_rank="0"} 38205.0',
    'sglang:num_retracted_input_tokens_total{model_name="m",tp_rank="1"} 1795.0',
    'sglang:num_retracted_output_tokens_total{model_name="m",tp_rank="0"} 612.0',
  ].join('\n');
  const f = flat(map(text, 'sglang'));
  assert.equal(f['prefix_cache_hit_ratio'], 0.25);
  assert.equal(f['prefix_cache_hits_total'], 250);
  assert.equal(f['preemptions_total'], 3);
  assert.equal(f['recomputed_prompt_tokens_total'], 40000);
  assert.equal(f['recomputed_output_tokens_total'], 612);
});

test('TGI (synthetic scrape in TGI\'s names): queue, batch, token sums, durations', () => {
  // Synthetic: no captured TGI scrape is in test/fixtures; names from TGI's metrics reference.
  const text = [
    '# TYPE tgi_queue_size gauge', 'tgi_queue_size 4',
    '# TYPE tgi_batch_current_size gauge', 'tgi_batch_current_size 12',
    '# TYPE tgi_request_input_length histogram',
    'tgi_request_input_length_bucket{le="100"} 2', 'tgi_request_input_length_bucket{le="+Inf"} 3',
    'tgi_request_input_length_sum 450', 'tgi_request_input_length_count 3',
    '# TYPE tgi_request_generated_tokens histogram',
    'tgi_request_generated_tokens_bucket{le="+Inf"} 3', 'tgi_request_generated_tokens_sum 96', 'tgi_request_generated_tokens_count 3',
    '# TYPE tgi_request_duration histogram',
    'tgi_request_duration_bucket{le="0.5"} 1', 'tgi_request_duration_bucket{le="+Inf"} 3',
    'tgi_request_duration_sum 4.5', 'tgi_request_duration_count 3',
    '# TYPE tgi_request_queue_duration histogram',
    'tgi_request_queue_duration_bucket{le="+Inf"} 3', 'tgi_request_queue_duration_sum 0.03', 'tgi_request_queue_duration_count 3',
  ].join('\n');
  assert.deepEqual(flat(map(text, 'tgi')), {
    requests_running: 12,
    requests_waiting: 4,
    prompt_tokens_total: 450,
    generation_tokens_total: 96,
    request_duration_seconds: { count: 3, sum: 4.5 },
    queue_time_seconds: { count: 3, sum: 0.03 },
  });
});

test('older llama-server with kv_cache_usage_ratio and no cached-token counter', () => {
  const text = 'llamacpp:kv_cache_usage_ratio 0.125\nllamacpp:prompt_tokens_total 50\nllamacpp:tokens_predicted_total 7\n';
  assert.deepEqual(flat(map(text, 'llamacpp')), { kv_cache_usage_ratio: 0.125, prompt_tokens_total: 50, generation_tokens_total: 7 });
});

test('a histogram without a +Inf bucket gets one from _count', () => {
  const text = 'vllm:time_to_first_token_seconds_bucket{le="1.0"} 2\nvllm:time_to_first_token_seconds_count 5\nvllm:time_to_first_token_seconds_sum 9\n';
  const s = map(text, 'vllm');
  assert.deepEqual(buckets(s, 'infermeter_engine_time_to_first_token_seconds'), [['1', 2], ['+Inf', 5]]);
});

test('HTML, JSON and garbage are not_prometheus', () => {
  for (const text of ['<!DOCTYPE html><html></html>', '{"error":"not found"}', '', 'a b c\nd e f\nx 1\n']) {
    assert.throws(() => map(text, 'vllm'), (err: unknown) => err instanceof CollectorError && err.kind === 'not_prometheus', JSON.stringify(text));
  }
});

test('alias tables name only catalogued families and only the engines config knows', () => {
  const names = new Set<string>(ENGINE_METRICS.map((d) => d.name));
  for (const [engine, table] of Object.entries(ENGINE_ALIASES)) {
    assert.ok((ENGINES as readonly string[]).includes(engine), engine);
    for (const name of Object.keys(table!)) assert.ok(names.has(name), `${engine}: ${name}`);
  }
  for (const d of ENGINE_METRICS) {
    assert.match(d.name, /^infermeter_engine_[a-z_]+$/);
    assert.deepEqual(d.labels, ['engine', 'upstream']); // upstream: issue 26 (which engine of several)
    if (d.type === 'counter') assert.match(d.name, /_total$/);
  }
});

test('the engine collector runs only for engines with an alias table, and can be turned off', () => {
  const entry = engineEntry();
  const cfg = (engine: string, on = 'true') => resolveConfig({ upstream: 'http://127.0.0.1:9', engine, collectorEngine: on }, {});
  for (const e of ['vllm', 'sglang', 'tgi', 'llamacpp']) assert.equal(entry.enabled(cfg(e)), true, e);
  for (const e of ['ollama', 'trtllm', 'openai']) assert.equal(entry.enabled(cfg(e)), false, e);
  assert.equal(entry.enabled(cfg('vllm', 'false')), false);
  assert.equal(cfg('vllm').engineMetrics, 'http://127.0.0.1:9/metrics');
});
