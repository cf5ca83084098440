/**
 * The two queues of the headroom model (docs/headroom.md), solved by simulating them rather
 * than by a closed form, so that the observed service-time mix is used as it is (no
 * exponential or deterministic assumption): Poisson arrivals at the rate asked, service
 * times drawn from the observed ones.
 *
 * - the prefill line: one server (the engine's per-step token budget serves prompts first
 *   come, first served), Lindley's recursion;
 * - the batch slots: `c` servers (--max-num-seqs, or the sequences the KV cache holds at
 *   this mix), first come, first served.
 *
 * Common random numbers: every call draws the same unit exponentials and the same service
 * picks from one seed, and only scales them, so a wait never falls when the rate rises.
 * That keeps the capacity search (estimate.ts) monotone and the figure steady from one
 * evaluation to the next.
 */

/** Simulated arrivals per solve: enough for a stable P99 at a few thousand operations. */
export const SIM_ARRIVALS = 6000;
/** Arrivals dropped before waits are counted, so the queue starts from its steady state. */
const WARMUP = 500;

/** A small, fast, seeded generator (mulberry32): the same draws every evaluation. */
function generator(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Unit-mean exponential gaps and uniform picks, drawn once. */
export class Draws {
  readonly gaps: Float64Array;
  readonly picks: Float64Array;

  constructor(n = SIM_ARRIVALS + WARMUP, seed = 0x5eed) {
    const rand = generator(seed);
    this.gaps = new Float64Array(n);
    this.picks = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      this.gaps[i] = -Math.log(1 - rand());
      this.picks[i] = rand();
    }
  }
}

/** Sorted waits (seconds) of the counted arrivals; an empty list means no queue forms at all. */
export type Waits = Float64Array;

const pick = (service: readonly number[], u: number) => service[Math.min(service.length - 1, Math.floor(u * service.length))]!;

/**
 * Waits in a single first-come-first-served server at `rate` arrivals per second, each
 * needing service[i] · scale seconds of it. Null when it cannot keep up (utilisation ≥ 1).
 */
export function singleServerWaits(draws: Draws, rate: number, service: readonly number[], scale: number): Waits | null {
  if (service.length === 0 || !(rate > 0)) return new Float64Array(0);
  const meanService = (service.reduce((a, b) => a + b, 0) / service.length) * scale;
  if (rate * meanService >= 1) return null;
  const out = new Float64Array(draws.gaps.length - WARMUP);
  let wait = 0;
  let prev = pick(service, draws.picks[0]!) * scale;
  for (let i = 1; i < draws.gaps.length; i++) {
    wait = Math.max(0, wait + prev - draws.gaps[i]! / rate);
    prev = pick(service, draws.picks[i]!) * scale;
    if (i >= WARMUP) out[i - WARMUP] = wait;
  }
  return out.sort();
}

/**
 * Waits in `c` first-come-first-served servers at `rate` arrivals per second, service[i] ·
 * scale seconds each. Null when they cannot keep up (offered load ≥ c).
 */
export function multiServerWaits(draws: Draws, rate: number, service: readonly number[], scale: number, c: number): Waits | null {
  if (service.length === 0 || !(rate > 0)) return new Float64Array(0);
  const servers = Math.max(1, Math.floor(c));
  const meanService = (service.reduce((a, b) => a + b, 0) / service.length) * scale;
  if (rate * meanService >= servers) return null;
  // free[s]: when server s is next free; a binary min-heap keyed by that time.
  const free = new Float64Array(servers);
  const out = new Float64Array(draws.gaps.length - WARMUP);
  let now = 0;
  for (let i = 0; i < draws.gaps.length; i++) {
    now += draws.gaps[i]! / rate;
    const start = Math.max(now, free[0]!);
    if (i >= WARMUP) out[i - WARMUP] = start - now;
    free[0] = start + pick(service, draws.picks[i]!) * scale;
    siftDown(free);
  }
  return out.sort();
}

function siftDown(h: Float64Array): void {
  let i = 0;
  const n = h.length;
  for (;;) {
    const l = 2 * i + 1;
    const r = l + 1;
    let m = i;
    if (l < n && h[l]! < h[m]!) m = l;
    if (r < n && h[r]! < h[m]!) m = r;
    if (m === i) return;
    const t = h[i]!;
    h[i] = h[m]!;
    h[m] = t;
    i = m;
  }
}

/** The wait at quantile u (0..1) of a sorted list; 0 for an empty one. */
export function waitAt(w: Waits, u: number): number {
  if (w.length === 0) return 0;
  return w[Math.min(w.length - 1, Math.max(0, Math.floor(u * w.length)))]!;
}
