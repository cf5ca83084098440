/**
 * Energy attribution end to end (docs/energy.md): two simulators behind one infermeter, engine-a
 * on GPUs 0,1 serving model-a under a heavy load, engine-b on GPUs 2,3 serving model-b under a
 * light one; the fake nvidia-smi's GPUs follow their own simulator's load
 * (FAKE_NVIDIA_SMI_SIM_URLS), so the two pairs draw different power. Through real sockets and
 * processes: each engine's energy (busy + idle) grows as its GPUs' counters do; busy + idle is
 * every GPU's energy; a model's joules per output token match its GPUs' energy over the load
 * divided by the tokens the simulator itself counted; each cost series is its energy or
 * GPU-seconds at the configured price. The figures are printed for docs/energy.md. Both sides
 * of each comparison come from the same readings and the simulators' own token counts, so the
 * file runs in the suite's shared pass.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent } from 'undici';
import { runLoad } from '../../src/sim/load.js';
import { startSimulator, type Simulator } from '../../src/sim/index.js';
import type { Sample } from '../../src/lib/prom-text.js';
import { FAKE_NVIDIA_SMI } from '../fakes/gpu.js';
import { InfermeterProcess } from '../fakes/infermeter-process.js';
import { scrape } from '../helpers.js';
import { status, statusValidator, statusWhen } from './ui-helpers.js';

const sims: Simulator[] = [];
let meter: InfermeterProcess | null = null;
let stopped = false;
const agent = new Agent({ connections: null });
const dir = mkdtempSync(join(tmpdir(), 'energy-two-engines-'));
after(async () => {
  stopped = true;
  await agent.destroy();
  await meter?.stop();
  await Promise.all(sims.map((s) => s.close()));
  rmSync(dir, { recursive: true, force: true });
});

/** The load's length: long enough that a second at either end is a few per cent of it. */
const LOAD_MS = 20_000;
/** What the measured disagreements must stay within (measured: see the printed figures and docs/energy.md). */
const ENGINE_TOLERANCE = 0.03;
const PER_TOKEN_TOLERANCE = 0.1;

const sum = (samples: Sample[], name: string, where: (l: Record<string, string>) => boolean = () => true) =>
  samples.filter((s) => s.name === name && where(s.labels)).reduce((a, s) => a + s.value, 0);
const gpuJoules = (samples: Sample[], gpus: string[]) => sum(samples, 'infermeter_gpu_energy_joules_total', (l) => gpus.includes(l['gpu']!));
const engineJoules = (samples: Sample[], upstream: string, state?: string) =>
  sum(samples, 'infermeter_energy_joules_total', (l) => l['upstream'] === upstream && (state === undefined || l['state'] === state));
const rel = (a: number, b: number) => Math.abs(a - b) / Math.abs(b);

test('two engines on GPUs {0,1} and {2,3}: each engine\'s energy is its GPUs\', busy + idle is all of it, a model\'s J/token is its GPUs\' energy over the simulator\'s tokens', { timeout: 180_000 }, async () => {
  const a = await startSimulator({ listen: '127.0.0.1:0', models: 'model-a' });
  const b = await startSimulator({ listen: '127.0.0.1:0', models: 'model-b' });
  sims.push(a, b);
  const config = join(dir, 'config.yaml');
  writeFileSync(config, [
    'upstreams:',
    `  - { name: engine-a, url: "${a.url}", gpus: [0, 1] }`,
    `  - { name: engine-b, url: "${b.url}", gpus: [2, 3], energyPrice: 0.5 }`,
    'slos:',
    '  default:',
    '    e2e: 60s',
    '',
  ].join('\n'));
  meter = new InfermeterProcess(
    ['--config', config, '--listen', '127.0.0.1:0', '--metrics-listen', '127.0.0.1:0', '--no-collector.host', '--nvidia-smi', FAKE_NVIDIA_SMI, '--gpu-source', 'nvidia-smi',
      '--gpu-hour-cost', '3.6', '--energy-price', '0.25', '--currency', 'EUR'],
    { FAKE_NVIDIA_SMI_GPUS: '4', FAKE_NVIDIA_SMI_PERIOD_MS: '250', FAKE_NVIDIA_SMI_SIM_URLS: `0,1=${a.url};2,3=${b.url}` },
  );
  await meter.start();
  const base = meter.metricsUrl;
  const metrics = async () => (await scrape(`${base}/metrics`)).samples;

  // Idle seconds of both engines attributed before any request: the energy side is running.
  await statusWhen(base, (d) => (d.energy?.upstreams.length ?? 0) === 2 && d.energy!.upstreams.every((u) => u.idleJoules > 0), 30_000);
  const before = await metrics();
  const loadStart = Date.now();
  const loop = async (model: string, maxTokens: number) => {
    while (!stopped && Date.now() - loadStart < LOAD_MS) await runLoad({ url: meter!.proxyUrl, model, route: 'chat', requests: 1, maxTokens, prompt: `tell me about ${model}`, dispatcher: agent });
  };
  // engine-a: 8 streams at once; engine-b: 1.
  await Promise.all([...Array.from({ length: 8 }, () => loop('model-a', 64)), loop('model-b', 64)]);
  const loadEnd = Date.now();
  const atEnd = await metrics();
  // Every second of the load attributed (the ledger waits for the requests in flight, then for the GPUs' readings).
  const doc = await statusWhen(base, (d) => (d.energy?.attributedThrough ?? 0) >= loadEnd + 3000, 30_000);
  const after = await metrics();
  const validate = statusValidator();
  assert.ok(validate(doc), JSON.stringify(validate.errors));

  const simTokens = (s: Simulator, model: string) => s.state().byModel[model]!.generationTokens;
  const tokensA = simTokens(a, 'model-a');
  const tokensB = simTokens(b, 'model-b');
  assert.ok(tokensA > 4 * tokensB && tokensB > 0, `model-a ${tokensA} tokens, model-b ${tokensB}`);
  // infermeter counted every token of the attributed seconds, as the simulators did.
  const counted = (model: string) => sum(after, 'infermeter_energy_output_tokens_total', (l) => l['gen_ai_request_model'] === model);
  assert.ok(Math.abs(counted('model-a') - tokensA) < 1e-6, `model-a: ${counted('model-a')} vs ${tokensA}`);
  assert.ok(Math.abs(counted('model-b') - tokensB) < 1e-6, `model-b: ${counted('model-b')} vs ${tokensB}`);

  // Each engine's attributed energy grows as its GPUs' counters do, between two idle moments.
  const grew = (s0: Sample[], s1: Sample[], f: (s: Sample[]) => number) => f(s1) - f(s0);
  const figures: Record<string, number> = {};
  for (const [upstream, gpus] of [['engine-a', ['0', '1']], ['engine-b', ['2', '3']]] as const) {
    const attributed = grew(before, after, (s) => engineJoules(s, upstream));
    const measured = grew(before, after, (s) => gpuJoules(s, [...gpus]));
    figures[`${upstream} attributed/GPUs`] = attributed / measured;
    assert.ok(rel(attributed, measured) < ENGINE_TOLERANCE, `${upstream}: attributed ${attributed} J, its GPUs ${measured} J`);
    // Busy + idle is all of the upstream's energy; idle has an empty model.
    const busy = engineJoules(after, upstream, 'busy');
    const idle = engineJoules(after, upstream, 'idle');
    assert.ok(Math.abs(busy + idle - engineJoules(after, upstream)) < 1e-6 * (busy + idle));
    assert.ok(after.filter((s) => s.name === 'infermeter_energy_joules_total' && s.labels['upstream'] === upstream && s.labels['state'] === 'idle').every((s) => s.labels['gen_ai_request_model'] === ''));
  }
  const all = ['0', '1', '2', '3'];
  const allAttributed = grew(before, after, (s) => sum(s, 'infermeter_energy_joules_total'));
  figures['busy+idle/all GPUs'] = allAttributed / grew(before, after, (s) => gpuJoules(s, all));
  assert.ok(rel(allAttributed, grew(before, after, (s) => gpuJoules(s, all))) < ENGINE_TOLERANCE, JSON.stringify(figures));

  // A model's joules per output token against its GPUs' energy over the load, over the simulator's own tokens.
  for (const [model, upstream, gpus, tokens] of [['model-a', 'engine-a', ['0', '1'], tokensA], ['model-b', 'engine-b', ['2', '3'], tokensB]] as const) {
    const attributed = sum(after, 'infermeter_energy_joules_total', (l) => l['gen_ai_request_model'] === model && l['state'] === 'busy') / counted(model);
    const truth = (gpuJoules(atEnd, [...gpus]) - gpuJoules(before, [...gpus])) / tokens;
    figures[`${model} J/token attributed/truth`] = attributed / truth;
    figures[`${model} J/token`] = attributed;
    figures[`${upstream} busy J`] = grew(before, after, (s) => engineJoules(s, upstream, 'busy'));
    figures[`${upstream} idle J`] = grew(before, after, (s) => engineJoules(s, upstream, 'idle'));
    figures[`${upstream} GPUs J over the load`] = gpuJoules(atEnd, [...gpus]) - gpuJoules(before, [...gpus]);
    assert.ok(rel(attributed, truth) < PER_TOKEN_TOLERANCE, `${model} (${upstream}): ${attributed} J/token attributed, ${truth} J/token from its GPUs over the load`);
  }
  // Batching: the busy engine spends less per token than the one running a stream at a time.
  assert.ok(figures['model-a J/token']! < figures['model-b J/token']!, JSON.stringify(figures));

  // Cost: energy at each upstream's price per kWh (engine-b its own), GPU time at 3.6 EUR per GPU-hour = 1 mEUR per GPU-second.
  for (const s of after.filter((x) => x.name === 'infermeter_energy_joules_total')) {
    const cost = (kind: string) => after.find((c) => c.name === 'infermeter_cost_total' && c.labels['kind'] === kind && c.labels['upstream'] === s.labels['upstream']
      && c.labels['gen_ai_request_model'] === s.labels['gen_ai_request_model'] && (s.labels['state'] === 'idle') === (c.labels['gen_ai_request_model'] === ''));
    const price = s.labels['upstream'] === 'engine-b' ? 0.5 : 0.25;
    const energy = cost('energy');
    assert.equal(energy?.labels['currency'], 'EUR');
    assert.ok(Math.abs(energy!.value - (s.value / 3.6e6) * price) < 1e-9, `${JSON.stringify(s.labels)}: ${energy!.value} vs ${(s.value / 3.6e6) * price}`);
    assert.ok(cost('gpu_time')!.value > 0);
  }
  // The page's per-model figures come from the same attribution.
  const { doc: page } = await status(base);
  const pa = page.models.find((m) => m.model === 'model-a')!.energy!;
  assert.ok(pa.joulesPerOutputToken! > 0 && pa.costPerMillionOutputTokens! > 0 && pa.goodOutputTokens === pa.outputTokens && pa.costPerMillionGoodOutputTokens === pa.costPerMillionOutputTokens, JSON.stringify(pa));
  console.log(JSON.stringify({ tokensA, tokensB, loadSeconds: (loadEnd - loadStart) / 1000, figures }));
});
