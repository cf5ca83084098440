/**
 * The simulator's /metrics is valid Prometheus text: promtool finds nothing but the ':'
 * in vLLM's own names (always reported, exit 3), in both V1 and V0 naming.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { parsePrometheusText } from '../../src/lib/prom-text.js';
import { startSimulator } from '../../src/sim/index.js';
import { chat, get, post } from '../helpers/sim.js';
import { skipWithout } from '../helpers/tools.js';

const hasPromtool = spawnSync('promtool', ['--version']).status === 0;

function promtoolFindings(text: string): { status: number | null; findings: string[] } {
  const r = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
  const findings = (r.stdout + r.stderr).split('\n').filter((l) => l.trim() !== '' && !l.includes("metric names should not contain ':'"));
  return { status: r.status, findings };
}

for (const format of ['v1', 'v0'] as const) {
  describe(`simulator /metrics (${format})`, { skip: skipWithout(hasPromtool, 'promtool not installed') }, () => {
    it('passes promtool check metrics apart from the colon finding', async () => {
      const sim = await startSimulator({ listen: '127.0.0.1:0', speed: 'max', metricsFormat: format });
      try {
        await Promise.all([1, 2, 3].map((i) => post(`${sim.url}/v1/chat/completions`, chat(`prompt ${i}`, { max_tokens: 8, stream: true }))));
        const { text } = await get(`${sim.url}/metrics`);
        const { status, findings } = promtoolFindings(text);
        assert.deepEqual(findings, []);
        assert.ok(status === 0 || status === 3, `promtool exit ${status}`);
        const scrape = parsePrometheusText(text);
        assert.equal(scrape.invalidLines, 0);
        const names = new Set(scrape.samples.map((s) => s.name));
        const expected = format === 'v1'
          ? ['vllm:kv_cache_usage_perc', 'vllm:prefix_cache_queries_total', 'vllm:inter_token_latency_seconds_bucket']
          : ['vllm:gpu_cache_usage_perc', 'vllm:gpu_prefix_cache_queries_total', 'vllm:time_per_output_token_seconds_bucket'];
        for (const n of expected) assert.ok(names.has(n), `${n} missing`);
        const engineLabel = scrape.samples.filter((s) => s.name === 'vllm:num_requests_running').every((s) => 'engine' in s.labels);
        assert.equal(engineLabel, format === 'v1');
        const generated = scrape.samples.find((s) => s.name === 'vllm:generation_tokens_total')!.value;
        assert.equal(generated, 24);
      } finally {
        await sim.close();
      }
    });
  });
}
