// test-group: alone (the hashing thread runs at nice 15 and sheds requests when other files share the cores; every ratio here is asserted on every request)
/**
 * The live prefix-cache model against the simulator's own prefix cache (docs/prefix-cache.md),
 * through real sockets and processes: four simulators, one per regime, behind one infermeter
 * with --prefix-cache, each serving its own model. Each regime asserts the three ratios and the
 * verdict; the figures are printed for docs/prefix-cache.md.
 *
 * - none: no prompt shares a block with another: no_reuse.
 * - fit: eight 1,024-token system prompts, each followed by a unique question, in a cache that
 *   holds them all: delivering, reuse at the engine's size within 3 points of the simulator's
 *   own hit ratio.
 * - small: 24 long prefixes in turn through a cache that holds 9 prompts: cache_too_small.
 * - off: the fit regime's traffic to a simulator with --prefix-caching false: caching_off.
 * - two replicas of one model, each with room for 10 of 16 system prompts, the prompts in a
 *   random order and the requests spread by load, not by prefix: routing_scatters, with the
 *   modelled gain of prefix-affine routing (8 prompts a replica fit).
 *
 * Every figure compared is a count of tokens (the model's and the simulator's), never a time:
 * the file runs in the shared pass.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent } from 'undici';
import { runLoad } from '../../src/sim/load.js';
import { startSimulator, type Simulator } from '../../src/sim/index.js';
import { InfermeterProcess } from '../fakes/infermeter-process.js';
import { underCi } from '../helpers/tools.js';
import { scrape, waitForMetrics } from '../helpers.js';
import { chromiumDom, status, statusValidator, statusWhen } from './ui-helpers.js';
import type { ModelStatus } from '../../src/exporters/ui/status-json.js';

const sims: Simulator[] = [];
let meter: InfermeterProcess | null = null;
const agent = new Agent({ connections: null });
const dir = mkdtempSync(join(tmpdir(), 'prefix-regimes-'));
after(async () => {
  await agent.destroy();
  await meter?.stop();
  await Promise.all(sims.map((s) => s.close()));
  rmSync(dir, { recursive: true, force: true });
});

/** `tokens` tokens of text unique to `seed`: four-character words, one token each (the simulator's count, infermeter's characters cut). */
function words(seed: string, tokens: number): string {
  let out = '';
  for (let i = 0; i < tokens; i++) out += `${(hash(`${seed}/${i}`) % 46_656).toString(36).padStart(3, '0')} `;
  return out;
}

function hash(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619) >>> 0;
  return h;
}

const REQUESTS = 96;

/** Each regime's prompt for request i. */
const PROMPTS: Record<string, (i: number) => string> = {
  none: (i) => words(`none-${i}`, 1152),
  fit: (i) => words(`fit-system-${i % 8}`, 1024) + words(`fit-q-${i}`, 128),
  small: (i) => words(`small-system-${i % 24}`, 1024) + words(`small-q-${i}`, 128),
  off: (i) => words(`fit-system-${i % 8}`, 1024) + words(`off-q-${i}`, 128),
  rep: (i) => words(`rep-system-${hash(`rep-${i}`) % 16}`, 1024) + words(`rep-q-${i}`, 128),
};
const REPLICA_REQUESTS = 192;

test('four regimes against the simulator\'s own prefix cache (no_reuse, delivering within 3 points of its hit ratio, cache_too_small, caching_off) and two replicas that scatter prefixes (routing_scatters)', { timeout: 180_000 }, async () => {
  const common = { listen: '127.0.0.1:0', decodeStepMs: 2, prefillTps: 0, stepPerSeqMs: 0 };
  const regimes = {
    none: await startSimulator({ ...common, models: 'r-none' }),
    fit: await startSimulator({ ...common, models: 'r-fit' }),
    // 600 blocks of 16: 9 of the 72-block prompts (1,152 tokens and 4 of output each).
    small: await startSimulator({ ...common, models: 'r-small', numGpuBlocksOverride: '600' }),
    off: await startSimulator({ ...common, models: 'r-off', prefixCaching: 'false' }),
  } as Record<string, Simulator>;
  // 760 blocks: 10 of the 73-block requests.
  const replicas = {
    'rep-a': await startSimulator({ ...common, models: 'r-rep', numGpuBlocksOverride: '760' }),
    'rep-b': await startSimulator({ ...common, models: 'r-rep', numGpuBlocksOverride: '760' }),
  } as Record<string, Simulator>;
  sims.push(...Object.values(regimes), ...Object.values(replicas));
  const config = join(dir, 'config.yaml');
  writeFileSync(config, ['upstreams:', ...Object.entries({ ...regimes, ...replicas }).map(([name, s]) => `  - { name: ${name}, url: "${s.url}" }`), ''].join('\n'));
  meter = new InfermeterProcess([
    '--config', config, '--listen', '127.0.0.1:0', '--metrics-listen', '127.0.0.1:0', '--no-collector.host', '--no-collector.gpu',
    '--engine-interval', '500ms', '--prefix-cache', 'true', '--prefix-cache-window', '5m',
  ], {});
  await meter.start();
  const base = meter.metricsUrl;
  // Every engine's cache read before the load (the model sizes its caches from it).
  await statusWhen(base, (d) => d.engines.length === 6 && d.engines.every((e) => e.up), 30_000);
  await new Promise((r) => setTimeout(r, 1500));

  // Two at a time per regime, all four at once; each model's requests in order, so a prefix's second request finds the first's blocks.
  await Promise.all([
    ...Object.keys(regimes).map((name) =>
      runLoad({ url: meter!.proxyUrl, model: `r-${name}`, route: 'completions', requests: REQUESTS, concurrency: 2, maxTokens: 4, prompt: PROMPTS[name]!, dispatcher: agent })),
    runLoad({ url: meter!.proxyUrl, model: 'r-rep', route: 'completions', requests: REPLICA_REQUESTS, concurrency: 2, maxTokens: 4, prompt: PROMPTS['rep']!, dispatcher: agent }),
  ]);
  const done = (m: ModelStatus | undefined) => (m?.prefixCache?.upstreams[0]?.requests ?? 0) === REQUESTS && m!.prefixCache!.upstreams[0]!.engine !== null && m!.prefixCache!.verdict !== null;
  // Every request reached the model (modelled, or shed: then the assertion on keptShare below names it).
  const TOTAL = 4 * REQUESTS + REPLICA_REQUESTS;
  await waitForMetrics(`${base}/metrics`, (x) => x.filter((m) => m.name === 'infermeter_prefix_cache_requests_total').reduce((n, m) => n + m.value, 0) >= TOTAL, 60_000);
  const shed = (await scrape(`${base}/metrics`)).samples.filter((m) => m.name === 'infermeter_prefix_cache_requests_total' && m.labels['result'] !== 'modelled');
  assert.deepEqual(shed.filter((m) => m.value > 0).map((m) => `${m.labels['result']}: ${m.value}`), [], 'every request modelled: nothing sampled or shed');
  const repDone = (m: ModelStatus | undefined) => m?.prefixCache?.verdict != null && m.prefixCache.affine !== null && m.prefixCache.upstreams.reduce((n, u) => n + u.requests, 0) === REPLICA_REQUESTS;
  const doc = await statusWhen(base, (d) => Object.keys(regimes).every((name) => done(d.models.find((m) => m.model === `r-${name}`))) && repDone(d.models.find((m) => m.model === 'r-rep')), 60_000);
  const validate = statusValidator();
  assert.ok(validate(doc), JSON.stringify(validate.errors));

  const rows: string[] = [];
  const figures = Object.fromEntries(Object.entries(regimes).map(([name, sim]) => {
    const p = doc.models.find((m) => m.model === `r-${name}`)!.prefixCache!;
    const u = p.upstreams[0]!;
    const s = sim.state();
    const own = s.prefixQueriedTokens > 0 ? s.prefixHitTokens / s.prefixQueriedTokens : 0;
    rows.push(`| ${name} | ${u.unbounded} | ${u.engineSize} | ${u.engine} (${u.engineFrom}) | ${own.toFixed(4)} | ${p.verdict!.kind} |`);
    assert.equal(u.upstream, name);
    return [name, { ...u, own, verdict: p.verdict!.kind, keptShare: p.keptShare }];
  }));
  console.log(['| regime | unbounded | engine size | engine | simulator\'s own hit ratio | verdict |', '| --- | --- | --- | --- | --- | --- |', ...rows].join('\n'));

  const { none, fit, small, off } = figures as Record<string, (typeof figures)[string]>;
  assert.equal(none!.verdict, 'no_reuse');
  assert.equal(none!.unbounded, 0);
  assert.equal(none!.own, 0);

  assert.equal(fit!.verdict, 'delivering');
  // 88 of 96 requests find their 1,024-token system prompt: 88 × 1024 / (96 × 1152) = 0.8148.
  assert.ok(Math.abs(fit!.unbounded! - 0.8148) < 0.01, `fit unbounded ${fit!.unbounded}`);
  assert.ok(Math.abs(fit!.engineSize! - fit!.own) < 0.03, `fit: engine size ${fit!.engineSize} against the simulator's own ${fit!.own}`);
  assert.ok(Math.abs(fit!.engine! - fit!.own) < 0.03, `fit: the engine's counters ${fit!.engine} against its state ${fit!.own}`);
  assert.equal(fit!.cacheTokens, 112_000, 'the simulator\'s cache_config_info: 7,000 blocks of 16');
  assert.equal(fit!.prefixCaching, true);

  assert.equal(small!.verdict, 'cache_too_small');
  assert.equal(small!.cacheTokens, 600 * 16);
  assert.ok(small!.unbounded! > 0.6, `small unbounded ${small!.unbounded}`);
  assert.ok(small!.engineSize! < 0.1 && small!.own < 0.1, `small: 24 prompts in turn through room for 9 find nothing: model ${small!.engineSize}, simulator ${small!.own}`);

  assert.equal(off!.verdict, 'caching_off');
  assert.equal(off!.prefixCaching, false);
  assert.equal(off!.engine, 0);
  assert.ok(off!.engineSize! > 0.7, 'a cache of its size would reuse the system prompts');
  for (const f of Object.values(figures)) assert.equal(f.keptShare, 1, 'nothing shed at this load');

  // Two replicas: each one's modelled cache against its own simulator, then the affine gain.
  const rep = doc.models.find((m) => m.model === 'r-rep')!.prefixCache!;
  const repRows: string[] = [];
  for (const [name, sim] of Object.entries(replicas)) {
    const u = rep.upstreams.find((x) => x.upstream === name)!;
    const s = sim.state();
    const own = s.prefixHitTokens / s.prefixQueriedTokens;
    repRows.push(`| ${name} | ${u.requests} | ${u.unbounded} | ${u.engineSize} | ${u.engine} | ${own.toFixed(4)} |`);
    assert.ok(u.requests > REPLICA_REQUESTS / 4, `${name} served ${u.requests}: spread over both`);
    assert.ok(Math.abs(u.engineSize! - own) < 0.05, `${name}: engine size ${u.engineSize} against the simulator's own ${own}`);
    assert.ok(u.engineSize! < u.unbounded! && u.engineSize! > 0.2, `${name}: its cache holds most, not all, of the prefixes: ${u.engineSize} of ${u.unbounded}`);
  }
  const routed = rep.verdict!.evidence.engineSize!;
  console.log([`two replicas: routed ${routed}, prefix-affine ${rep.affine}, verdict ${rep.verdict!.kind}`, '| replica | requests | unbounded | engine size | engine | simulator\'s own |', '| --- | --- | --- | --- | --- | --- |', ...repRows].join('\n'));
  assert.equal(rep.replicas, 2);
  assert.equal(rep.verdict!.kind, 'routing_scatters');
  assert.ok(rep.affine! > routed + 0.15, `prefix-affine ${rep.affine} against routed ${routed}`);
  assert.match(rep.verdict!.advice[0]!.text, /llm-d|Dynamo/);

  const text = (await scrape(`${base}/metrics`)).samples;
  const ratio = (model: string, cache: string) => text.find((x) => x.name === 'infermeter_prefix_reuse_ratio' && x.labels['gen_ai_request_model'] === model && x.labels['cache'] === cache)?.value;
  assert.ok(Math.abs(ratio('r-fit', 'engine_size')! - fit!.engineSize!) < 0.01);
  assert.equal(ratio('r-off', 'engine'), 0);
  const series = text.filter((x) => x.name === 'infermeter_prefix_reuse_ratio');
  assert.equal(series.length, 18, 'one per model, upstream and cache: (4 + 2) × 3');
  const { text: page } = await status(base);
  assert.doesNotMatch(page, /fit-system|words/, 'hashes only: no prompt text in the status document');

  // The page's cell: the three shares and the verdict, as Chromium renders them.
  const dom = await chromiumDom(`${base}/`, join(dir, 'chromium'));
  if (dom === null) {
    assert.ok(!underCi(), 'CI has Chromium: the page cell must be checked');
    return;
  }
  const cellOf = (model: string) => {
    const row = new RegExp(`<tr[^>]*data-model="${model}"[^>]*>([\\s\\S]*?)</tr>`).exec(dom);
    assert.ok(row, `no row for ${model}`);
    return /<td[^>]*data-field="prefix"[^>]*>([^<]*)<\/td>/.exec(row[1]!)?.[1];
  };
  assert.equal(cellOf('r-small'), '67 % / 0 % / 0 % · cache too small');
  assert.equal(cellOf('r-fit'), '81 % / 81 % / 81 % · delivering');
  assert.equal(cellOf('r-off'), '81 % / 81 % / 0 % · caching off');
});
