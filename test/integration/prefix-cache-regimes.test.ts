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
import { scrape } from '../helpers.js';
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
};

test('four regimes against the simulator\'s own prefix cache: no_reuse, delivering (within 3 points of its hit ratio), cache_too_small, caching_off', { timeout: 180_000 }, async () => {
  const common = { listen: '127.0.0.1:0', decodeStepMs: 2, prefillTps: 0, stepPerSeqMs: 0 };
  const regimes = {
    none: await startSimulator({ ...common, models: 'r-none' }),
    fit: await startSimulator({ ...common, models: 'r-fit' }),
    // 600 blocks of 16: 9 of the 72-block prompts (1,152 tokens and 4 of output each).
    small: await startSimulator({ ...common, models: 'r-small', numGpuBlocksOverride: '600' }),
    off: await startSimulator({ ...common, models: 'r-off', prefixCaching: 'false' }),
  } as Record<string, Simulator>;
  sims.push(...Object.values(regimes));
  const config = join(dir, 'config.yaml');
  writeFileSync(config, ['upstreams:', ...Object.entries(regimes).map(([name, s]) => `  - { name: ${name}, url: "${s.url}" }`), ''].join('\n'));
  meter = new InfermeterProcess([
    '--config', config, '--listen', '127.0.0.1:0', '--metrics-listen', '127.0.0.1:0', '--no-collector.host', '--no-collector.gpu',
    '--engine-interval', '500ms', '--prefix-cache', 'true', '--prefix-cache-window', '5m',
  ], {});
  await meter.start();
  const base = meter.metricsUrl;
  // Every engine's cache read before the load (the model sizes its caches from it).
  await statusWhen(base, (d) => d.engines.length === 4 && d.engines.every((e) => e.up), 30_000);
  await new Promise((r) => setTimeout(r, 1500));

  // Two at a time per regime, all four at once; each model's requests in order, so a prefix's second request finds the first's blocks.
  await Promise.all(Object.keys(regimes).map((name) =>
    runLoad({ url: meter!.proxyUrl, model: `r-${name}`, route: 'completions', requests: REQUESTS, concurrency: 2, maxTokens: 4, prompt: PROMPTS[name]!, dispatcher: agent }),
  ));
  const done = (m: ModelStatus | undefined) => (m?.prefixCache?.upstreams[0]?.requests ?? 0) === REQUESTS && m!.prefixCache!.upstreams[0]!.engine !== null && m!.prefixCache!.verdict !== null;
  const doc = await statusWhen(base, (d) => Object.keys(regimes).every((name) => done(d.models.find((m) => m.model === `r-${name}`))), 30_000);
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

  const text = (await scrape(`${base}/metrics`)).samples;
  const ratio = (model: string, cache: string) => text.find((x) => x.name === 'infermeter_prefix_reuse_ratio' && x.labels['gen_ai_request_model'] === model && x.labels['cache'] === cache)?.value;
  assert.ok(Math.abs(ratio('r-fit', 'engine_size')! - fit!.engineSize!) < 0.01);
  assert.equal(ratio('r-off', 'engine'), 0);
  const series = text.filter((x) => x.name === 'infermeter_prefix_reuse_ratio');
  assert.equal(series.length, 12, 'one per model, upstream and cache: 4 × 3');
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
