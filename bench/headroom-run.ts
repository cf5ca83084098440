/**
 * The pieces of the headroom accuracy check (docs/headroom.md, "Accuracy"), shared by
 * `npm run bench:headroom` and test/integration/headroom-*.test.ts:
 *
 * - open-loop Poisson load of a regime's request mix, at a steady rate, through any URL;
 * - the knee: a stepped sweep straight against the simulator (the ground truth), refined by
 *   bisection, the lowest rate whose P99 of TTFT, TPOT or E2E is over its threshold;
 * - the live estimate: infermeter in front of the simulator, the load held at a share of the
 *   knee, `models[].capacity` read from /api/v1/status once the window has filled.
 *
 * Rates and SLOs in a regime are in simulated time; at --speed s every rate is × s and every
 * duration ÷ s, so the figures here come back in simulated units.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent } from 'undici';
import { runLoad } from '../src/sim/load.js';
import { spawnSimulator, type SimulatorProcess } from '../src/sim/child.js';
import { prng } from '../src/sim/text.js';
import { InfermeterProcess } from '../test/fakes/infermeter-process.js';
import type { HeadroomRegime, MixEntry } from './headroom-regimes.js';
import type { StatusDocument } from '../src/exporters/ui/status-json.js';

export const MODEL = 'headroom-model';

export interface Done {
  /** Unix ms sent. */
  start: number;
  ok: boolean;
  ttft: number | null;
  tpot: number | null;
  e2e: number;
  outputTokens: number;
  promptTokens: number;
}

/** What the load is sent to: the simulator, or a real engine (bench/headroom-llama.ts). */
export interface Upstream {
  url: string;
  close(): Promise<void>;
}

/** Process starts get a minute: on a shared, loaded machine a start can take tens of seconds. */
const START_MS = 60_000;

export function startSim(regime: HeadroomRegime, speed: number): Promise<SimulatorProcess> {
  return spawnSimulator(['--listen', '127.0.0.1:0', '--models', MODEL, '--speed', String(speed), '--seed', '7', ...regime.sim], START_MS);
}

function pickEntry(mix: readonly MixEntry[], u: number): MixEntry {
  const total = mix.reduce((a, m) => a + m.weight, 0);
  let at = u * total;
  for (const m of mix) {
    if ((at -= m.weight) < 0) return m;
  }
  return mix[mix.length - 1]!;
}

const between = ([lo, hi]: [number, number], u: number) => Math.round(lo + (hi - lo) * u);

/** A prompt of about `tokens` tokens (the simulator counts 4 characters a token), unique from its first block on. */
function prompt(i: number, tokens: number): string {
  const head = `r${i} `;
  return (head + 'lorem ipsum dolor sit amet '.repeat(Math.ceil((tokens * 4) / 27))).slice(0, Math.max(head.length, tokens * 4 - 12));
}

/**
 * Open-loop Poisson arrivals of the regime's mix at `rate` (wall req/s) for `ms`; resolves
 * when every request sent has finished. `stop()` ends the arrivals early.
 */
export function openLoad(url: string, regime: HeadroomRegime, rate: number, ms: number, seed: number): { done: Promise<Done[]>; stop(): void } {
  const agent = new Agent({ connections: null, keepAliveTimeout: 10_000 });
  const rand = prng(seed);
  const out: Done[] = [];
  const pending: Promise<void>[] = [];
  let stopped = false;
  const t0 = performance.now();
  const done = (async () => {
    let at = 0;
    for (let i = 0; !stopped; i++) {
      at += (-Math.log(1 - rand()) * 1000) / rate;
      if (at > ms) break;
      const wait = t0 + at - performance.now();
      if (wait > 1) await new Promise((r) => setTimeout(r, wait));
      if (stopped) break;
      const entry = pickEntry(regime.mix, rand());
      const p = prompt(seed * 1_000_000 + i, between(entry.prompt, rand()));
      const maxTokens = between(entry.output, rand());
      const start = Date.now();
      pending.push(runLoad({ url, model: regime.model ?? MODEL, route: entry.api, requests: 1, maxTokens, prompt: p, dispatcher: agent }).then((run) => {
        const r = run.results[0]!;
        out.push({ start, ok: r.ok, ttft: r.ttft, tpot: r.tpot, e2e: r.e2e, outputTokens: r.outputTokens, promptTokens: r.promptTokens ?? 0 });
      }));
    }
    await Promise.all(pending);
    await agent.close();
    return out;
  })();
  return { done, stop: () => (stopped = true) };
}

/** P-quantile (nearest rank) of a list; NaN when empty. */
export function pct(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]! : NaN;
}

export interface StepResult {
  rate: number;
  requests: number;
  p99: { ttft: number; tpot: number; e2e: number };
  broke: boolean;
}

/** One load step straight against the simulator, in simulated units; requests of the first `warmFraction` of the step are dropped. */
export async function step(sim: Upstream, regime: HeadroomRegime, speed: number, rate: number, simSeconds: number, seed: number, warmFraction = 0.2): Promise<StepResult> {
  const ms = (simSeconds * 1000) / speed;
  const results = await openLoad(sim.url, regime, rate * speed, ms, seed).done;
  const first = Math.min(...results.map((r) => r.start));
  const kept = results.filter((r) => r.start >= first + ms * warmFraction);
  const ok = kept.filter((r) => r.ok);
  const p99 = {
    ttft: pct(ok.map((r) => r.ttft!).filter((v) => v !== null), 0.99) * speed,
    tpot: pct(ok.map((r) => r.tpot).filter((v): v is number => v !== null), 0.99) * speed,
    e2e: pct(ok.map((r) => r.e2e), 0.99) * speed,
  };
  const failed = kept.length - ok.length;
  const broke = failed > kept.length * 0.01 || (['ttft', 'tpot', 'e2e'] as const).some((s) => regime.slos[s] !== undefined && !(p99[s] <= regime.slos[s]!));
  return { rate, requests: kept.length, p99, broke };
}

/**
 * The knee: steps from `sweep.from` up by `factor` until one breaks, then `refine` bisections
 * between the last good and the first broken rate. Returns the geometric middle of the final
 * bracket, and every step run.
 */
export async function findKnee(regime: HeadroomRegime, speed: number, simSeconds: number, refine: number, log: (s: StepResult) => void = () => undefined,
  start: () => Promise<Upstream> = () => startSim(regime, speed)): Promise<{ knee: number; steps: StepResult[] }> {
  const sim = await start();
  const steps: StepResult[] = [];
  try {
    let good = 0;
    let bad = Infinity;
    let seed = 11;
    for (let rate = regime.sweep.from; rate <= regime.sweep.to * 1.0001; rate *= 1.25) {
      const s = await step(sim, regime, speed, rate, simSeconds, seed++);
      steps.push(s);
      log(s);
      if (s.broke) {
        bad = rate;
        break;
      }
      good = rate;
    }
    if (!Number.isFinite(bad)) throw new Error(`${regime.name}: no step up to ${regime.sweep.to} req/s broke its SLOs`);
    if (good === 0) throw new Error(`${regime.name}: the first step (${regime.sweep.from} req/s) already broke its SLOs`);
    for (let i = 0; i < refine; i++) {
      const mid = Math.sqrt(good * bad);
      const s = await step(sim, regime, speed, mid, simSeconds, seed++);
      steps.push(s);
      log(s);
      if (s.broke) bad = mid;
      else good = mid;
    }
    return { knee: Math.sqrt(good * bad), steps };
  } finally {
    await sim.close();
  }
}

export interface LiveRead {
  share: number;
  /** Simulated req/s offered, and what the estimate said (simulated req/s; null: unknown). */
  offered: number;
  estimates: (number | null)[];
  /** The median estimate, and its error against the knee. */
  estimate: number | null;
  error: number | null;
  bindingSlo: string | null;
  bindingLimit: string | null;
  reasons: string[];
}

export interface LiveOptions {
  speed: number;
  knee: number;
  shares: readonly number[];
  /** Wall seconds of load before the first read (the window fills), then reads every `readEvery` for `reads` reads. */
  warmSeconds: number;
  reads: number;
  readEvery: number;
  /** infermeter's --headroom-window, wall seconds. */
  windowSeconds: number;
  /** Extra infermeter flags. */
  args?: string[];
  /** The upstream (default: the simulator shaped as the regime). */
  start?: () => Promise<Upstream>;
}

/** infermeter in front of the simulator, one load share after the other (each with a fresh simulator and daemon). */
export async function readLive(regime: HeadroomRegime, o: LiveOptions, log: (r: LiveRead) => void = () => undefined): Promise<LiveRead[]> {
  const out: LiveRead[] = [];
  for (const [i, share] of o.shares.entries()) {
    const [r] = await liveLevels(regime, { ...o, shares: [share] }, 100 + i);
    out.push(r!);
    log(r!);
  }
  return out;
}

/**
 * One simulator and one infermeter in front of it; the load held at each share of the knee in
 * turn, each for `warmSeconds` (at least the window, so the share before has left it) and then
 * `reads` reads of models[].capacity.
 */
export async function liveLevels(regime: HeadroomRegime, o: LiveOptions, seed = 100): Promise<LiveRead[]> {
  const dir = mkdtempSync(join(tmpdir(), 'headroom-'));
  const sim = await (o.start ?? (() => startSim(regime, o.speed)))();
  const slos = Object.entries(regime.slos).map(([k, v]) => `    ${k}: ${(v / o.speed).toFixed(6)}s\n`).join('');
  writeFileSync(join(dir, 'config.yaml'), `slos:\n  default:\n${slos}`);
  const d = new InfermeterProcess(['--upstream', sim.url, '--listen', '127.0.0.1:0', '--metrics-listen', '127.0.0.1:0', '--no-collector.gpu', '--no-collector.host',
    '--engine-interval', '0.25s', '--bottleneck-interval', '1s', '--headroom-window', `${o.windowSeconds}s`, '--config', join(dir, 'config.yaml'), ...(o.args ?? [])], {});
  const out: LiveRead[] = [];
  try {
    await d.start(START_MS);
    for (const [i, share] of o.shares.entries()) {
      const offered = share * o.knee;
      const total = (o.warmSeconds + o.reads * o.readEvery) * 1000 + 2000;
      const load = openLoad(d.proxyUrl, regime, offered * o.speed, total, seed + i);
      await sleep(o.warmSeconds * 1000);
      const estimates: (number | null)[] = [];
      const reasons: string[] = [];
      // The binding SLO and limit of the last read that had an estimate.
      let last: CapacityView | null = null;
      for (let r = 0; r < o.reads; r++) {
        if (r > 0) await sleep(o.readEvery * 1000);
        const read = await capacityOf(d.metricsUrl, regime.model ?? MODEL);
        estimates.push(read?.requestsPerSecond == null ? null : read.requestsPerSecond / o.speed);
        if (read?.reason) reasons.push(read.reason);
        if (read?.requestsPerSecond != null) last = read;
      }
      load.stop();
      await load.done;
      const known = estimates.filter((e): e is number => e !== null).sort((a, b) => a - b);
      const estimate = known.length > o.reads / 2 ? known[Math.floor(known.length / 2)]! : null;
      out.push({ share, offered, estimates, estimate, error: estimate === null ? null : estimate / o.knee - 1, bindingSlo: last?.bindingSlo ?? null, bindingLimit: last?.bindingLimit ?? null, reasons });
    }
    return out;
  } finally {
    await d.stop();
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

type CapacityView = { requestsPerSecond: number | null; reason: string | null; bindingSlo: string | null; bindingLimit: string | null };

export async function capacityOf(base: string, model = MODEL): Promise<CapacityView | null> {
  const res = await fetch(`${base}/api/v1/status`);
  const doc = (await res.json()) as StatusDocument;
  return (doc.models.find((m) => m.model === model) as { capacity?: CapacityView } | undefined)?.capacity ?? null;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
