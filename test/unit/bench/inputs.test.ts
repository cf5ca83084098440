import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parsePromptLines, syntheticPrompts } from '../../../src/bench/prompts.js';
import { parseSloFlag, resolveBenchOptions, type BenchFlags } from '../../../src/bench/options.js';
import { detectEngine, parseCudaVersion } from '../../../src/bench/environment.js';
import { ConfigError } from '../../../src/lib/errors.js';

test('synthetic prompts: fixed length (4 chars/token), deterministic per seed, each one different from the start', () => {
  const a = syntheticPrompts(512, 42);
  const b = syntheticPrompts(512, 42);
  assert.equal(a.prompt(0).length, 512 * 4);
  assert.equal(a.prompt(7), b.prompt(7));
  assert.notEqual(a.prompt(7), syntheticPrompts(512, 43).prompt(7));
  assert.notEqual(a.prompt(0).slice(0, 16), a.prompt(1).slice(0, 16));
  assert.match(a.source, /4 characters per token/);
});

test('prompt files: one per line or JSONL with prompt/text', () => {
  assert.deepEqual(parsePromptLines('first prompt\n\n{"prompt":"second"}\r\n{"text":"third"}\n{not json\n'), ['first prompt', 'second', 'third', '{not json']);
});

test('--slo parses durations per SLO name and refuses unknown names and ttfo', () => {
  assert.deepEqual(parseSloFlag('ttft=500ms,tpot=50ms,e2e=3s'), { ttft: 0.5, tpot: 0.05, e2e: 3 });
  assert.throws(() => parseSloFlag('ttfo=1s'), /ttfo is not judged/);
  assert.throws(() => parseSloFlag('latency=1s'), /unknown SLO/);
  assert.throws(() => parseSloFlag('ttft=0s'), /greater than 0/);
});

const flags = (over: Partial<BenchFlags> = {}): BenchFlags => ({
  target: 'http://127.0.0.1:8000/', route: 'completion', inputTokens: '512', outputTokens: '128', warmup: '20', requests: '100',
  duration: '60s', arrivals: 'poisson', seed: '42', nvidiaSmi: 'nvidia-smi', sampleInterval: '1s', ...over,
});

test('options: default load steps only when neither --qps nor --concurrency is given; bad flags are named', () => {
  const o = resolveBenchOptions(flags(), ['infermeter', 'bench']);
  assert.equal(o.target, 'http://127.0.0.1:8000');
  assert.deepEqual(o.qps, [1, 4, 8, 16, 32]);
  assert.deepEqual(resolveBenchOptions(flags({ concurrency: '1,8' }), []).qps, []);
  assert.deepEqual(resolveBenchOptions(flags({ qps: 'none' }), []).qps, []);
  assert.equal(resolveBenchOptions(flags({ nvidiaSmi: 'none', engineMetrics: 'none' }), []).nvidiaSmi, null);
  for (const [over, name] of [[{ target: undefined }, '--target'], [{ qps: '1,x' }, '--qps'], [{ concurrency: '1.5' }, '--concurrency'],
    [{ duration: 'soon' }, '--duration'], [{ engine: 'triton' }, '--engine'], [{ arrivals: 'bursty' }, '--arrivals'], [{ outputTokens: '0' }, '--output-tokens']] as [Partial<BenchFlags>, string][]) {
    assert.throws(() => resolveBenchOptions(flags(over), []), (err: unknown) => err instanceof ConfigError && err.flag === name, name);
  }
});

test('environment: CUDA version from the nvidia-smi banner, engine kind from the /metrics prefix', () => {
  assert.equal(parseCudaVersion('| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |'), '12.4');
  assert.equal(parseCudaVersion('fake nvidia-smi (infermeter): supports dmon'), null);
  assert.equal(detectEngine('# HELP vllm:num_requests_running x\nvllm:num_requests_running{engine="0"} 1\n'), 'vllm');
  assert.equal(detectEngine('sglang:num_running_reqs 0\n'), 'sglang');
  assert.equal(detectEngine('llamacpp:requests_processing 0\n'), 'llamacpp');
  assert.equal(detectEngine('up 1\n'), null);
});
