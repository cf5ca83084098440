/**
 * `infermeter bench --api messages|responses`: the benchmark speaks each generation API end to
 * end, through infermeter over the simulator, and agrees with the proxy: every request counted
 * on its route, the output tokens the bench read from the API's own usage equal the proxy's,
 * and each stream has one TTFT. `--api` maps the route labels' words; a bad value names the flag.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runBench } from '../../src/bench/run.js';
import { resolveBenchOptions, type BenchFlags } from '../../src/bench/options.js';
import { reportRoute } from '../../src/bench/report.js';
import { ConfigError } from '../../src/lib/errors.js';
import { startSimulator } from '../../src/sim/index.js';
import { startProxy, sumSamples, waitForMetrics } from '../helpers.js';
import { benchOptions } from './bench-helpers.js';

const FLAGS: BenchFlags = {
  target: 'http://127.0.0.1:8000', route: 'completion', inputTokens: '512', outputTokens: '128', warmup: '0', requests: '1', duration: '1s',
  arrivals: 'poisson', seed: '1', nvidiaSmi: 'none', sampleInterval: '1s',
};

test('--api names the four APIs; --route keeps its old values; a bad --api is named', () => {
  const route = (api?: string) => resolveBenchOptions({ ...FLAGS, ...(api === undefined ? {} : { api }) }, []).route;
  // One name per API inside (record/routes.ts APIS); bench.json keeps --route's word for completions.
  assert.deepEqual(['chat', 'completions', 'messages', 'responses'].map(route), ['chat', 'completions', 'messages', 'responses']);
  assert.equal(route(), 'completions');
  assert.equal(resolveBenchOptions({ ...FLAGS, route: 'chat' }, []).route, 'chat');
  assert.deepEqual(['chat', 'completions', 'messages', 'responses'].map((a) => reportRoute(route(a))), ['chat', 'completion', 'messages', 'responses']);
  assert.throws(() => route('anthropic'), (err: unknown) => err instanceof ConfigError && err.flag === '--api');
  assert.throws(() => resolveBenchOptions({ ...FLAGS, route: 'completions' }, []), (err: unknown) => err instanceof ConfigError && err.flag === '--route');
});

for (const api of ['messages', 'responses'] as const) {
  test(`bench --api ${api} through infermeter: tokens and requests agree with the proxy`, { timeout: 60_000 }, async () => {
    const sim = await startSimulator({ listen: '127.0.0.1:0', speed: 'max' });
    const proxy = await startProxy({ upstream: sim.url });
    try {
      const report = await runBench(benchOptions(proxy.url, { route: api, warmup: 0, requests: 4, outputTokens: 12 }));
      const single = report.singleStream!;
      assert.equal(single.summary.ok, 4, JSON.stringify(single.requests.map((r) => r.error)));
      assert.equal(report.config.route, api);
      const s = await waitForMetrics(proxy.metricsUrl, (x) => sumSamples(x, 'infermeter_requests_total', { route: api }) === 4);
      const benchTokens = single.requests.reduce((a, r) => a + r.outputTokens, 0);
      assert.equal(benchTokens, 4 * 12, 'ignore_eos honoured: exactly max tokens each');
      assert.equal(sumSamples(s, 'infermeter_tokens_total', { gen_ai_token_type: 'output' }), benchTokens);
      assert.equal(sumSamples(s, 'gen_ai_server_time_to_first_token_seconds_count'), 4);
      assert.ok(single.requests.every((r) => r.ttft !== null && r.ttft > 0));
    } finally {
      await proxy.close();
      await sim.close();
    }
  });
}
