/**
 * Which work measure splits an engine's energy between its models as the engine's own time
 * does: output tokens alone (--energy-prefill-rate 0), or prompts weighted by the time their
 * prefill takes at a given prefill rate (tokens per second), output tokens sharing the rest. Two models share one simulated engine under several mixes and loads. The energy is
 * the simulator's busy time (1 J per busy second, sampled every 100 ms); the truth is its own
 * per-model busy time (sim/engine.ts ModelWork: each step's time split between the sequences it
 * ran). The split is infermeter's own (metrics/energy/ledger.ts: second by second, each request's
 * work spread over its life), fed the requests as the client saw them. docs/energy.md quotes
 * the output.
 *
 *   npm run build && node dist/scripts/energy-weight.js
 */
import { performance } from 'node:perf_hooks';
import { startSimulator } from '../src/sim/index.js';
import { runLoad, type RequestResult } from '../src/sim/load.js';
import { EnergyLedger } from '../src/metrics/energy/ledger.js';
import { parsePrometheusText } from '../src/lib/prom-text.js';

interface Mix {
  name: string;
  /** Per model: prompt length (characters: about 4 per token), max_tokens, streams in flight. */
  a: { chars: number; maxTokens: number; concurrency: number };
  b: { chars: number; maxTokens: number; concurrency: number };
}

const MIXES: Mix[] = [
  { name: 'chat vs RAG, light', a: { chars: 250, maxTokens: 128, concurrency: 2 }, b: { chars: 6000, maxTokens: 16, concurrency: 2 } },
  { name: 'chat vs RAG, heavy', a: { chars: 250, maxTokens: 128, concurrency: 12 }, b: { chars: 6000, maxTokens: 16, concurrency: 12 } },
  { name: 'short vs long replies', a: { chars: 250, maxTokens: 32, concurrency: 6 }, b: { chars: 250, maxTokens: 384, concurrency: 6 } },
  { name: 'summaries vs chat', a: { chars: 12_000, maxTokens: 96, concurrency: 4 }, b: { chars: 400, maxTokens: 192, concurrency: 8 } },
];
/** Prefill rates tried, prompt tokens per second of the engine (Infinity: output tokens alone); the simulator's own is 8000 × its --speed. */
const RATES = [Infinity, 4000, 8000, 16_000, 32_000, 64_000];
const SECONDS = 20;

const filler = 'The quick brown fox jumps over the lazy dog while the scheduler batches every sequence. ';
const prompt = (chars: number) => (i: number) => `${i} ${Math.random()} ${filler.repeat(Math.ceil(chars / filler.length))}`.slice(0, chars);

interface Run {
  /** model-a's share of the simulator's busy time. */
  truth: number;
  /** The engine's own prompt tokens over its prefill time (vllm:prompt_tokens_total / vllm:request_prefill_time_seconds_sum). */
  engineRate: number;
  energy: { from: number; to: number; joules: number }[];
  requests: { model: string; base: number; r: RequestResult }[];
}

async function measure(mix: Mix): Promise<Run> {
  const sim = await startSimulator({ listen: '127.0.0.1:0', models: 'model-a,model-b', speed: 2, seed: 7 });
  const energy: Run['energy'] = [];
  const busy = () => Object.values(sim.state().byModel).reduce((a, w) => a + w.busySeconds, 0);
  let last = { at: performance.now(), busy: 0 };
  const sampler = setInterval(() => {
    const now = { at: performance.now(), busy: busy() };
    energy.push({ from: last.at, to: now.at, joules: now.busy - last.busy });
    last = now;
  }, 100);
  const requests: Run['requests'] = [];
  const end = performance.now() + SECONDS * 1000;
  try {
    await Promise.all((['a', 'b'] as const).map(async (k) => {
      const spec = mix[k];
      await Promise.all(Array.from({ length: spec.concurrency }, async (_, lane) => {
        for (let i = 0; performance.now() < end; i++) {
          const base = performance.now();
          const run = await runLoad({ url: sim.url, model: `model-${k}`, route: 'chat', requests: 1, maxTokens: spec.maxTokens, prompt: () => prompt(spec.chars)(lane * 1000 + i) });
          requests.push({ model: `model-${k}`, base, r: run.results[0]! });
        }
      }));
    }));
    const now = { at: performance.now(), busy: busy() };
    energy.push({ from: last.at, to: now.at, joules: now.busy - last.busy });
    const w = sim.state().byModel;
    const sums = new Map<string, number>();
    for (const x of parsePrometheusText(await (await fetch(`${sim.url}/metrics`)).text()).samples) sums.set(x.name, (sums.get(x.name) ?? 0) + x.value);
    const engineRate = sums.get('vllm:prompt_tokens_total')! / sums.get('vllm:request_prefill_time_seconds_sum')!;
    return { truth: w['model-a']!.busySeconds / (w['model-a']!.busySeconds + w['model-b']!.busySeconds), engineRate, energy, requests };
  } finally {
    clearInterval(sampler);
    await sim.close();
  }
}

/** model-a's share of the energy as infermeter splits it at prefill rate `rate` (Infinity: output tokens alone). */
function split(run: Run, rate: number): number {
  const l = new EnergyLedger();
  for (const e of run.energy) if (e.joules > 0) l.addEnergy('0', ['sim'], e.from, e.to, e.joules);
  for (const { model, base, r } of run.requests) {
    l.addWork({
      upstream: 'sim', model, startMs: base + r.startMs, ttftMs: r.ttft === null ? null : r.ttft * 1000, endMs: base + r.startMs + r.e2e * 1000,
      prefillSeconds: (r.promptTokens ?? 0) / rate, outputTokens: r.outputTokens, goodOutputTokens: 0,
    });
  }
  const shares = l.settle(performance.now() + 3_600_000, null);
  const of = (m: string) => shares.filter((s) => s.model === m).reduce((a, s) => a + s.joules, 0);
  return of('model-a') / (of('model-a') + of('model-b'));
}

const rows: string[] = [];
const worst = new Map<number, number>(RATES.map((w) => [w, 0]));
for (const mix of MIXES) {
  const run = await measure(mix);
  const cells = RATES.map((w) => {
    const err = split(run, w) - run.truth;
    worst.set(w, Math.max(worst.get(w)!, Math.abs(err)));
    return (100 * err).toFixed(1);
  });
  const engineErr = split(run, run.engineRate) - run.truth;
  worst.set(-1, Math.max(worst.get(-1) ?? 0, Math.abs(engineErr)));
  rows.push(`| ${mix.name} | ${run.requests.length} | ${(100 * run.truth).toFixed(1)} % | ${cells.join(' | ')} | ${Math.round(run.engineRate)}: ${(100 * engineErr).toFixed(1)} |`);
}
console.log(`| mix (${SECONDS} s each) | requests | model-a's share of the engine's busy time | ${RATES.map((w) => (w === Infinity ? 'output tokens alone' : `prefill ${w} tok/s`)).join(' | ')} | the engine's own rate (tok/s): error |`);
console.log(`| --- | --- | --- | ${RATES.map(() => '---').join(' | ')} | --- |`);
for (const r of rows) console.log(r);
console.log(`| worst (points) | | | ${RATES.map((w) => (100 * worst.get(w)!).toFixed(1)).join(' | ')} | ${(100 * worst.get(-1)!).toFixed(1)} |`);
