/**
 * The live prefix-cache model (src/metrics/prefix/live.ts) fed hashed requests by hand, with a
 * machine snapshot built by hand: the three ratios per model and upstream, blocks cut at the
 * engine's reported block size, the engine's figure from usage or its counters, the sliding
 * window, the verdicts; the engine's cache read from real vLLM and SGLang scrapes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { PrefixHasher } from '../../../src/lib/block-hash.js';
import { parsePrometheusText } from '../../../src/lib/prom-text.js';
import { cacheConfigOf } from '../../../src/collectors/engine/cache-config.js';
import { MachineSnapshot } from '../../../src/collectors/snapshot.js';
import { UNMEASURED, type RequestRecord } from '../../../src/record/record.js';
import { LAG_MS, PrefixCacheMonitor, type PrefixCacheSettings } from '../../../src/metrics/prefix/live.js';
import { UnboundedPrefixSet, spreadOf } from '../../../src/metrics/prefix/model.js';
import { prefixVerdict, type ReuseRatios } from '../../../src/metrics/prefix/verdict.js';
import type { HashedRequest, PromptReader } from '../../../src/metrics/prompt/blocks.js';
import type { PromptBlocksStage } from '../../../src/metrics/prompt/blocks.js';
import { engineOf } from '../../helpers/machine.js';
import { ROOT } from '../../helpers.js';

const hasher = new PrefixHasher('salt');
const upstreams = [
  { name: 'a', url: 'http://127.0.0.1:1', engine: 'vllm' },
  { name: 'b', url: 'http://127.0.0.1:2', engine: 'vllm' },
] as never;

function setup(over: Partial<PrefixCacheSettings> = {}) {
  let now = 1_000_000;
  const machine = new MachineSnapshot();
  let reader: PromptReader | null = null;
  const stage = { subscribe: (r: PromptReader) => (reader = r) } as unknown as PromptBlocksStage;
  const registry = new Registry();
  const settings: PrefixCacheSettings = { prefixCache: true, prefixCacheWindow: 60, prefixCacheSample: 1, prefixCacheBlockSize: 16, prefixCacheTokens: 0, ...over };
  const m = new PrefixCacheMonitor({ registry, machine, settings, upstreams, stage, log: pino({ level: 'silent' }), now: () => now });
  assert.equal(reader, m);
  /** A request of `tokens` token ids (a shared `prefix` of them first) to upstream `u`, started at `at` ms after now. */
  const send = (o: { prefix?: number[]; tokens: number; u?: number; at?: number; e2e?: number; cached?: number; label?: string; draw?: number }) => {
    const ids = [...(o.prefix ?? [])];
    while (ids.length < o.tokens) ids.push(Math.floor(Math.random() * 1e9));
    const record: RequestRecord = {
      ...UNMEASURED, route: 'chat_completions', operation: 'chat', model: o.label ?? 'm', outcome: 'ok', status: 200, streamed: true, errorType: null, tenant: null,
      upstream: o.u ?? 0, modelAdmitted: true, startedAt: now + (o.at ?? 0), e2e: (o.e2e ?? 100) / 1000, outputTokens: 10,
      inputTokens: o.tokens, inputTokensKnown: o.cached !== undefined, cachedInputTokens: o.cached ?? -1,
    };
    const h: HashedRequest = { record, label: o.label ?? 'm', blocks: hasher.tokens(ids, m.blockTokens), skipped: null, draw: o.draw ?? 0, maxTokens: null, stream: true, session: null, tokenizer: null };
    m.read([h]);
  };
  const advance = (ms: number) => {
    now += ms;
    m.tick();
  };
  const gaugeOf = async (labels: Record<string, string>) => {
    const g = (await registry.getMetricsAsJSON()).find((x) => x.name === 'infermeter_prefix_reuse_ratio')!;
    return g.values.find((v) => Object.entries(labels).every(([k, val]) => v.labels[k] === val))?.value ?? null;
  };
  return { m, machine, send, advance, gaugeOf, registry, now: () => now };
}

const shared = Array.from({ length: 160 }, (_, i) => i + 1); // 10 blocks of 16

test('unbounded and engine size: a shared 160-token prefix, blocks at the engine\'s size, the last prompt token never a hit', async () => {
  const t = setup();
  t.machine.setEngine({ ...engineOf('a', {}), cacheConfig: { blockSize: 16, tokens: 16 * 1000, prefixCaching: true, from: 'vllm:cache_config_info' } });
  t.advance(0);
  assert.equal(t.m.blockTokens, 16);
  for (let i = 0; i < 10; i++) t.send({ prefix: shared, tokens: 320, at: i * 10 });
  t.advance(LAG_MS + 100);
  const row = t.m.status().get('m')!.upstreams.find((r) => r.upstream === 'a')!;
  // The first finds nothing; each of the nine others the 10 shared blocks: 9 × 160 of 10 × 320.
  assert.equal(row.requests, 10);
  assert.equal(row.unbounded, (9 * 160) / 3200);
  assert.equal(row.engineSize, (9 * 160) / 3200, 'a cache of 1000 blocks holds it all');
  assert.equal(row.cacheTokens, 16000);
  assert.equal(await t.gaugeOf({ upstream: 'a', cache: 'unbounded' }), 0.45);
  assert.equal(await t.gaugeOf({ upstream: 'a', cache: 'engine' }), null, 'no engine figure: no series');
  // A whole prompt seen before: its last block is computed again (vLLM's rule).
  t.send({ prefix: shared, tokens: 160, at: 0 });
  t.advance(LAG_MS + 100);
  const again = t.m.status().get('m')!.upstreams.find((r) => r.upstream === 'a')!;
  assert.equal(again.unbounded, (9 * 160 + 144) / 3360);
});

test('a cache too small for the prefixes reuses less than the unbounded set; running requests hold their blocks', () => {
  const t = setup({ prefixCacheTokens: 16 * 30 });
  const prefixes = Array.from({ length: 4 }, (_, k) => Array.from({ length: 160 }, (_, i) => 10_000 * (k + 1) + i));
  for (let round = 0; round < 6; round++) for (let k = 0; k < 4; k++) t.send({ prefix: prefixes[k], tokens: 192, at: round * 40 + k * 10, e2e: 5 });
  t.advance(LAG_MS + 1000);
  const row = t.m.status().get('m')!.upstreams[0]!;
  assert.equal(row.cacheTokens, 480, '--prefix-cache-tokens, where the engine reports none');
  assert.ok(row.unbounded! > 0.6, `unbounded ${row.unbounded}`);
  assert.ok(row.engineSize! < row.unbounded! - 0.3, `30 blocks cannot hold four 11-block prompts in turn: ${row.engineSize} against ${row.unbounded}`);
});

test('the engine\'s figure: usage cached_tokens per model where reported, else the engine\'s counters over the window', async () => {
  const t = setup();
  t.machine.setEngine({ ...engineOf('a', { prefixCacheHitsTotal: 100, prefixCacheQueriesTotal: 1000 }), at: t.now() });
  t.advance(1000);
  t.machine.setEngine({ ...engineOf('a', { prefixCacheHitsTotal: 400, prefixCacheQueriesTotal: 2000 }), at: t.now() });
  for (let i = 0; i < 3; i++) t.send({ prefix: shared, tokens: 200, at: i });
  t.advance(LAG_MS + 100);
  let row = t.m.status().get('m')!.upstreams[0]!;
  assert.equal(row.engineFrom, 'engine_counters');
  assert.equal(row.engine, 300 / 1000);
  t.send({ tokens: 200, cached: 150, u: 0 });
  t.advance(100);
  row = t.m.status().get('m')!.upstreams[0]!;
  assert.equal(row.engineFrom, 'usage');
  assert.equal(row.engine, 0.75);
  assert.equal(await t.gaugeOf({ upstream: 'a', cache: 'engine' }), 0.75);
  // An engine restart (counters back down) starts its window again.
  t.machine.setEngine({ ...engineOf('b', { prefixCacheHitsTotal: 5000, prefixCacheQueriesTotal: 9000 }), at: t.now() });
  t.advance(1000);
  t.machine.setEngine({ ...engineOf('b', { prefixCacheHitsTotal: 10, prefixCacheQueriesTotal: 100 }), at: t.now() });
  t.advance(1000);
  t.machine.setEngine({ ...engineOf('b', { prefixCacheHitsTotal: 60, prefixCacheQueriesTotal: 200 }), at: t.now() });
  t.send({ tokens: 64, u: 1 });
  t.advance(LAG_MS + 100);
  assert.equal(t.m.status().get('m')!.upstreams.find((r) => r.upstream === 'b')!.engine, 0.5);
});

test('the window slides: a prefix last seen longer ago than the window is no reuse; old requests leave the ratios', () => {
  const t = setup({ prefixCacheWindow: 10 });
  t.send({ prefix: shared, tokens: 200 });
  t.advance(LAG_MS);
  t.advance(12_000);
  t.send({ prefix: shared, tokens: 200, at: 0 });
  t.advance(LAG_MS + 100);
  const row = t.m.status().get('m')!.upstreams[0]!;
  assert.equal(row.requests, 1, 'the first request left the window');
  assert.equal(row.unbounded, 0, 'its blocks expired with it');
  const set = new UnboundedPrefixSet<number>(1 << 20, 10_000);
  const keys = [1, 2, 3];
  assert.equal(set.admit(keys, keys.map((k) => spreadOf(k)), [16, 16, 16], 0), 0);
  assert.equal(set.admit(keys, keys.map((k) => spreadOf(k)), [16, 16, 16], 9_000), 48);
  assert.equal(set.admit(keys, keys.map((k) => spreadOf(k)), [16, 16, 16], 18_500), 48, 'seen again at 9 s: still in the window');
  assert.equal(set.admit(keys, keys.map((k) => spreadOf(k)), [16, 16, 16], 40_000), 0);
  assert.equal(set.size, 3);
});

test('sampled requests are counted, not modelled; the kept share says so', async () => {
  const t = setup({ prefixCacheSample: 0.5 });
  t.send({ tokens: 64, draw: 0.2 });
  t.send({ tokens: 64, draw: 0.7 });
  t.advance(LAG_MS + 100);
  const st = t.m.status().get('m')!;
  assert.equal(st.keptShare, 0.5);
  assert.equal(st.upstreams[0]!.requests, 1);
  const c = (await t.registry.getMetricsAsJSON()).find((x) => x.name === 'infermeter_prefix_cache_requests_total')!;
  assert.deepEqual(c.values.map((v) => [v.labels['result'], v.value]).sort(), [['modelled', 1], ['sampled', 1]]);
});

test('verdicts: one row per kind, first that holds; fewer than 20 requests give none', () => {
  const r = (o: Partial<ReuseRatios>): ReuseRatios => ({ requests: 100, unbounded: 0.8, engineSize: 0.78, affine: null, engine: 0.77, prefixCaching: true, ...o });
  assert.equal(prefixVerdict(r({ requests: 19 }), 'vllm'), null);
  assert.equal(prefixVerdict(r({ unbounded: 0.03, engineSize: 0.03, engine: 0 }), 'vllm')!.kind, 'no_reuse');
  assert.equal(prefixVerdict(r({ prefixCaching: false, engine: 0 }), 'vllm')!.kind, 'caching_off');
  assert.equal(prefixVerdict(r({ prefixCaching: null, engine: 0.005 }), 'vllm')!.kind, 'caching_off');
  assert.equal(prefixVerdict(r({ engineSize: 0.3, engine: 0.29 }), 'vllm')!.kind, 'cache_too_small');
  assert.equal(prefixVerdict(r({ affine: 0.75, engineSize: 0.4, unbounded: 0.8, engine: 0.4 }), 'vllm')!.kind, 'routing_scatters', 'routing is named before size: it costs no memory');
  assert.equal(prefixVerdict(r({ affine: 0.45, engineSize: 0.4, unbounded: 0.8, engine: 0.4 }), 'vllm')!.kind, 'cache_too_small', 'affinity would not close the gap');
  assert.equal(prefixVerdict(r({ affine: 0.78, engineSize: 0.55, unbounded: 0.62, engine: 0.55 }), 'vllm')!.kind, 'routing_scatters');
  const ok = prefixVerdict(r({}), 'sglang')!;
  assert.equal(ok.kind, 'delivering');
  assert.equal(ok.advice[0]!.engine, 'sglang', 'the configured engine\'s advice first');
  assert.match(prefixVerdict(r({ prefixCaching: false }), 'vllm')!.advice[0]!.text, /--enable-prefix-caching/);
});

test('the engine\'s cache from real scrapes: vLLM\'s cache_config_info, SGLang\'s pool gauges, none elsewhere', () => {
  const vllm = parsePrometheusText(readFileSync(`${ROOT}test/fixtures/vllm-v0-metrics-0.10-cpu-full.prom`, 'utf8')).samples;
  assert.deepEqual(cacheConfigOf(vllm, 'vllm'), { blockSize: 16, tokens: 16 * 2340, prefixCaching: null, from: 'vllm:cache_config_info' }, 'V0 writes "None" before it decides');
  // SGLang's gauges as its metrics collector emits them (names from sglang/srt/metrics/collector.py; values made up).
  const sglang = parsePrometheusText([
    '# TYPE sglang:max_total_num_tokens gauge', 'sglang:max_total_num_tokens{model_name="m"} 471258.0',
    '# TYPE sglang:page_size gauge', 'sglang:page_size{model_name="m"} 64.0',
  ].join('\n')).samples;
  assert.deepEqual(cacheConfigOf(sglang, 'sglang'), { blockSize: 64, tokens: 471258, prefixCaching: null, from: 'sglang:max_total_num_tokens' });
  assert.equal(cacheConfigOf(parsePrometheusText(readFileSync(`${ROOT}test/fixtures/sglang-metrics-docs-example.prom`, 'utf8')).samples, 'sglang'), null, 'older SGLang: no pool gauge');
  assert.equal(cacheConfigOf(parsePrometheusText(readFileSync(`${ROOT}test/fixtures/llama-server-metrics.prom`, 'utf8')).samples, 'llamacpp'), null);
  const v1 = parsePrometheusText('vllm:cache_config_info{block_size="32",enable_prefix_caching="False",num_gpu_blocks="100",engine="0"} 1').samples;
  assert.deepEqual(cacheConfigOf(v1, 'vllm'), { blockSize: 32, tokens: 3200, prefixCaching: false, from: 'vllm:cache_config_info' });
});
