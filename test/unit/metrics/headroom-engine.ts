/**
 * A continuous-batching engine in virtual time, for the headroom model's unit tests: no
 * sockets, no timers, no noise, so the estimate can be held to its own error and the knee is
 * exact. Each step lasts base + perSeq × batch + prefill tokens / prefillTps; it decodes one
 * token for every running sequence and spends what is left of the token budget on prompts,
 * first come, first served; a request waits for a slot (maxSeqs) first. The same shape as
 * src/sim/engine.ts, without KV blocks.
 */
import type { HeadroomRequest } from '../../../src/metrics/headroom/observe.js';

export interface EngineShape {
  baseMs: number;
  perSeqMs: number;
  prefillTps: number;
  budget: number;
  maxSeqs: number;
}

export interface Mix {
  prompt: [number, number];
  output: [number, number];
}

function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Seq {
  arrival: number;
  prompt: number;
  output: number;
  prefillLeft: number;
  generated: number;
  first: number;
}

/** `n` requests at `rate` req/s (Poisson), starting at Unix ms `t0`; every one runs to its end. */
export function runEngine(shape: EngineShape, mix: Mix, rate: number, n: number, seed = 1, t0 = 1_000_000): HeadroomRequest[] {
  const rand = rng(seed);
  const pick = ([lo, hi]: [number, number]) => Math.round(lo + (hi - lo) * rand());
  const arrivals: Seq[] = [];
  let at = 0;
  for (let i = 0; i < n; i++) {
    at += -Math.log(1 - rand()) / rate;
    const prompt = pick(mix.prompt);
    arrivals.push({ arrival: at, prompt, output: pick(mix.output), prefillLeft: prompt, generated: 0, first: -1 });
  }
  const out: HeadroomRequest[] = [];
  const waiting: Seq[] = [];
  let running: Seq[] = [];
  let next = 0;
  let t = 0;
  while (out.length < n) {
    while (next < n && arrivals[next]!.arrival <= t) waiting.push(arrivals[next++]!);
    while (waiting.length > 0 && running.length < shape.maxSeqs) running.push(waiting.shift()!);
    if (running.length === 0) {
      t = arrivals[next]!.arrival;
      continue;
    }
    let budget = shape.budget;
    const prefill: [Seq, number][] = [];
    const decode: Seq[] = [];
    for (const s of running) {
      if (budget <= 0) break;
      if (s.prefillLeft > 0) {
        const k = Math.min(s.prefillLeft, budget);
        prefill.push([s, k]);
        budget -= k;
      } else {
        decode.push(s);
        budget -= 1;
      }
    }
    const tokens = prefill.reduce((a, [, k]) => a + k, 0);
    t += (shape.baseMs + shape.perSeqMs * (prefill.length + decode.length) + (tokens / shape.prefillTps) * 1000) / 1000;
    for (const [s, k] of prefill) {
      s.prefillLeft -= k;
      if (s.prefillLeft === 0) {
        s.first = t;
        s.generated = 1;
      }
    }
    for (const s of decode) s.generated++;
    running = running.filter((s) => {
      if (s.first < 0 || s.generated < s.output) return true;
      out.push({ start: t0 + s.arrival * 1000, ttft: s.first - s.arrival, e2e: t - s.arrival, inputTokens: s.prompt, outputTokens: s.output });
      return false;
    });
  }
  return out;
}

/** P-quantiles of TTFT, TPOT and E2E over requests, the first `skip` dropped (warm-up). */
export function p99s(reqs: readonly HeadroomRequest[], q = 0.99, skip = 0.1): { ttft: number; tpot: number; e2e: number } {
  const kept = [...reqs].sort((a, b) => a.start - b.start).slice(Math.floor(reqs.length * skip));
  const at = (xs: number[]) => xs.sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil(q * xs.length) - 1)]!;
  return {
    ttft: at(kept.map((r) => r.ttft)),
    tpot: at(kept.filter((r) => r.outputTokens >= 2).map((r) => (r.e2e - r.ttft) / (r.outputTokens - 1))),
    e2e: at(kept.map((r) => r.e2e)),
  };
}
