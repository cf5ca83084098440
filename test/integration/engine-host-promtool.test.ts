/**
 * `promtool check metrics` (Prometheus's own linter) accepts what the engine and host
 * collectors export, for every captured engine scrape: exit 0, no finding at all.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Registry } from 'prom-client';
import { resolveConfig } from '../../src/config.js';
import { type EngineKind } from '../../src/lib/engines.js';
import { createLogger } from '../../src/lib/log.js';
import { EngineCollector } from '../../src/collectors/engine/collector.js';
import { HostCollector } from '../../src/collectors/host/collector.js';
import { ProxyLoopMetrics } from '../../src/collectors/host/proxy-loop.js';
import { startFakeEngine, type FakeEngine } from '../fakes/engine-metrics-server.js';
import { generateVllmScrape } from '../fakes/vllm-scrape.js';
import { skipWithout } from '../helpers/tools.js';

const fixture = (name: string) => readFileSync(new URL(`../../../test/fixtures/${name}`, import.meta.url), 'utf8');
const promtool = spawnSync('promtool', ['--version']).status === 0;
const fakes: FakeEngine[] = [];
after(async () => {
  for (const f of fakes) await f.close();
});

const CASES: [string, string, EngineKind][] = [
  ['vllm-v0-metrics-0.10-cpu-full.prom', fixture('vllm-v0-metrics-0.10-cpu-full.prom'), 'vllm'],
  ['vllm-v1-metrics-head40.prom', fixture('vllm-v1-metrics-head40.prom'), 'vllm'],
  ['vllm-v1-metrics-0.10.0-deprecated-names-excerpt.prom', fixture('vllm-v1-metrics-0.10.0-deprecated-names-excerpt.prom'), 'vllm'],
  ['sglang-metrics-docs-example.prom', fixture('sglang-metrics-docs-example.prom'), 'sglang'],
  ['llama-server-metrics-busy.prom', fixture('llama-server-metrics-busy.prom'), 'llamacpp'],
  ['5,000-line synthetic vLLM scrape', generateVllmScrape(5000), 'vllm'],
];

for (const [label, body, engine] of CASES) {
  test(`promtool check metrics passes on the registry after scraping ${label}`, { skip: skipWithout(promtool, 'promtool not installed (apt-get install prometheus)') }, async () => {
    const fake = await startFakeEngine({ body });
    fakes.push(fake);
    const config = resolveConfig({ upstream: 'http://127.0.0.1:9', engine, engineMetrics: fake.url }, {});
    const registry = new Registry();
    const log = createLogger('silent');
    const engineCollector = new EngineCollector({ registry, config, log });
    const host = new HostCollector({ registry, config, log });
    new ProxyLoopMetrics(registry).update(0, { p50: 0.001, p99: 0.004, max: 0.012, heapUsedBytes: 12345678 });
    try {
      await engineCollector.collect(AbortSignal.timeout(10_000));
      await host.collect();
      const text = await registry.metrics();
      assert.match(text, new RegExp(`infermeter_engine_\\w+\\{engine="${engine}"`));
      const r = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
      assert.equal(r.status, 0, `promtool: ${r.stdout}${r.stderr}`);
      assert.equal(`${r.stdout}${r.stderr}`.trim(), '');
    } finally {
      await engineCollector.close();
    }
  });
}
