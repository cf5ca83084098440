import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parsePrometheusText, parseSampleLine, sumSamples } from '../../../src/lib/prom-text.js';

const fixture = (name: string) => readFileSync(new URL(`../../../../test/fixtures/${name}`, import.meta.url), 'utf8');

// Every captured scrape: sample and TYPE counts (counted by hand with grep), no invalid
// line, and a few values read off the file.
const FIXTURES: { file: string; samples: number; types: number; spot: [string, Record<string, string>, number][] }[] = [
  { file: 'vllm-v0-metrics-0.10-cpu-full.prom', samples: 260, types: 22, spot: [
    ['vllm:time_to_first_token_seconds_bucket', { le: '+Inf', model_name: 'Qwen/Qwen3-0.6B' }, 69],
    ['vllm:time_to_first_token_seconds_sum', {}, 4941.843970537186],
    ['vllm:prompt_tokens_total', {}, 43952],
    ['vllm:lora_requests_info', { running_lora_adapters: '' }, 1.755178079975038e9],
    ['vllm:request_success_total', { finished_reason: 'length' }, 38],
  ] },
  { file: 'vllm-v1-metrics-head40.prom', samples: 13, types: 13, spot: [
    ['vllm:prefix_cache_queries_created', { engine: '0', model_name: 'llama-vllm-single' }, 1.7769301736864316e9],
    ['vllm:num_requests_running', { engine: '0' }, 0],
  ] },
  { file: 'vllm-v1-metrics-0.10.0-deprecated-names-excerpt.prom', samples: 5, types: 5, spot: [
    ['vllm:kv_cache_usage_perc', { model_name: 'zai-org/GLM-4.5' }, 9.75010481363281e-6],
    ['vllm:prefix_cache_queries_total', {}, 32],
  ] },
  { file: 'sglang-metrics-docs-example.prom', samples: 91, types: 12, spot: [
    ['sglang:prompt_tokens_total', {}, 8.128902e6],
    ['sglang:func_latency_seconds_bucket', { le: '0.07500000000000001', name: 'generate_request' }, 14006],
    ['sglang:num_queue_reqs', {}, 2826],
  ] },
  { file: 'llama-server-metrics.prom', samples: 15, types: 15, spot: [
    ['llamacpp:prompt_tokens_cached_total', {}, 157],
    ['llamacpp:n_busy_slots_per_decode', {}, 1.49452],
  ] },
  { file: 'llama-server-metrics-busy.prom', samples: 15, types: 15, spot: [
    ['llamacpp:requests_processing', {}, 2],
    ['llamacpp:requests_deferred', {}, 1],
  ] },
  { file: 'nvidia-gpu-exporter-excerpt.prom', samples: 3, types: 0, spot: [
    ['nvidia_smi_temperature_gpu', { uuid: 'd0b27d44-e215-eeda-b053-6a2342e854c5' }, 32],
  ] },
];

for (const f of FIXTURES) {
  test(`parses ${f.file}`, () => {
    const parsed = parsePrometheusText(fixture(f.file));
    assert.equal(parsed.invalidLines, 0);
    assert.equal(parsed.samples.length, f.samples);
    assert.equal(parsed.types.size, f.types);
    for (const [name, match, value] of f.spot) assert.equal(sumSamples(parsed.samples, name, match), value, `${name} ${JSON.stringify(match)}`);
  });
}

test('TYPE lines map family names to types', () => {
  const parsed = parsePrometheusText(fixture('vllm-v1-metrics-head40.prom'));
  assert.equal(parsed.types.get('vllm:prefix_cache_queries_total'), 'counter');
  assert.equal(parsed.types.get('vllm:prefix_cache_queries_created'), 'gauge');
});

const LINES: [string, ReturnType<typeof parseSampleLine>][] = [
  ['up 1', { name: 'up', labels: {}, value: 1 }],
  ['up{} 1', { name: 'up', labels: {}, value: 1 }],
  ['a:b_c{x="1",y="two"} 2.5e+06', { name: 'a:b_c', labels: { x: '1', y: 'two' }, value: 2.5e6 }],
  ['m{x="1",} 3', { name: 'm', labels: { x: '1' }, value: 3 }],
  ['m { x = "1" } 3', null], // a blank between name and { is not the format
  ['m{path="C:\\\\dir",q="say \\"hi\\"",nl="a\\nb"} 1', { name: 'm', labels: { path: 'C:\\dir', q: 'say "hi"', nl: 'a\nb' }, value: 1 }],
  ['m{brace="}{",eq="a=b, c"} 1', { name: 'm', labels: { brace: '}{', eq: 'a=b, c' }, value: 1 }],
  ['m 7 1700000000000', { name: 'm', labels: {}, value: 7, timestamp: 1700000000000 }],
  ['m 7 -5', { name: 'm', labels: {}, value: 7, timestamp: -5 }],
  ['m\t7\t1700000000000', { name: 'm', labels: {}, value: 7, timestamp: 1700000000000 }],
  ['m 7 1.5', null],
  ['h_bucket{le="1"} 3 # {trace_id="abc"} 0.5 1700000000.1', { name: 'h_bucket', labels: { le: '1' }, value: 3 }],
  ['m 7 1 2', null],
  ['m +Inf', { name: 'm', labels: {}, value: Infinity }],
  ['m -Inf', { name: 'm', labels: {}, value: -Infinity }],
  ['m Inf', { name: 'm', labels: {}, value: Infinity }],
  ['m -0.5', { name: 'm', labels: {}, value: -0.5 }],
  ['m .5', { name: 'm', labels: {}, value: 0.5 }],
  ['m', null],
  ['m abc', null],
  ['m{x="unterminated} 1', null],
  ['m{x=unquoted} 1', null],
  ['m{1x="a"} 1', null],
  ['9m 1', null],
  ['{x="a"} 1', null],
  ['<html><body>nope</body></html>', null],
];

for (const [line, expected] of LINES) {
  test(`sample line ${JSON.stringify(line)}`, () => assert.deepEqual(parseSampleLine(line), expected));
}

test('NaN values parse to NaN (not dropped)', () => {
  for (const text of ['m NaN', 'm nan']) {
    const s = parseSampleLine(text);
    assert.ok(s && Number.isNaN(s.value), text);
  }
});

test('garbage lines are counted, never fatal; comments and blank lines are skipped', () => {
  const text = '# HELP a x\n# TYPE a gauge\na 1\n\n   \nnot a line at all\n{"json": true}\n# EOF\nb{x="y"} 2\r\n';
  const parsed = parsePrometheusText(text);
  assert.deepEqual(parsed.samples.map((s) => [s.name, s.value]), [['a', 1], ['b', 2]]);
  assert.equal(parsed.invalidLines, 2);
  assert.equal(parsed.types.get('a'), 'gauge');
});

test('CRLF line endings and a missing final newline', () => {
  const parsed = parsePrometheusText('a 1\r\nb 2');
  assert.deepEqual(parsed.samples.map((s) => s.value), [1, 2]);
  assert.equal(parsed.invalidLines, 0);
});

test('sumSamples adds matching series only', () => {
  const { samples } = parsePrometheusText('m{e="0",k="a"} 1\nm{e="1",k="a"} 2\nm{e="1",k="b"} 4\nn 8\n');
  assert.equal(sumSamples(samples, 'm'), 7);
  assert.equal(sumSamples(samples, 'm', { k: 'a' }), 3);
  assert.equal(sumSamples(samples, 'm', { e: '1', k: 'b' }), 4);
  assert.equal(sumSamples(samples, 'absent'), 0);
});
