/**
 * What the headroom model reads off one model's finished requests (docs/headroom.md,
 * "Inputs"), with nothing but the request records:
 *
 * - the decode batch each request shared: from every request's first and last token the
 *   number decoding at each instant is known exactly (Little's law made concrete), and each
 *   request's TPOT is set against the mean of that number over its own decode;
 * - how much of its decode shared the engine with a prompt being prefilled: an engine that
 *   runs prompt chunks in the decode step (vLLM's chunked prefill) slows every sequence while
 *   a prompt is in prefill, whatever the batch;
 * - how TPOT grows with that batch (and with that share, where it shows): TPOT = base +
 *   slope · batch (+ perPrefillShare · share);
 * - what its TTFT was made of: first come, first served, a request cannot have its first
 *   token before an earlier one, so the part of its TTFT spent after the last earlier first
 *   token is its own service and the rest is queue (Lindley's decomposition);
 * - its own prefill work: that service less one engine step, or, when prompt lengths vary
 *   enough to tell, less the intercept of service against prompt length.
 */

export interface HeadroomRequest {
  /** Unix ms the proxy received it. */
  start: number;
  /** Seconds. */
  ttft: number;
  e2e: number;
  inputTokens: number;
  outputTokens: number;
}

/** One usable request: every number the model needs about it. */
export interface Observed {
  ttft: number;
  /** (e2e − ttft) / (outputTokens − 1), seconds; null under 2 tokens. */
  tpot: number | null;
  outputTokens: number;
  inputTokens: number;
  /** Mean number of requests decoding during its own decode (itself included). */
  batch: number;
  /** Share (0 to 1) of its own decode during which another request's prompt was in prefill (its TTFT service). */
  prefillShare: number;
  /** Of its TTFT: waiting behind earlier requests' first tokens (queue), and the rest (service). */
  wait: number;
  service: number;
}

export interface Line {
  intercept: number;
  slope: number;
  /** Standard error of the slope. */
  slopeError: number;
  n: number;
}

/** Least squares y = intercept + slope · x; null under 3 points or with no spread in x. */
export function fitLine(xs: readonly number[], ys: readonly number[]): Line | null {
  const n = xs.length;
  if (n < 3) return null;
  let sx = 0;
  let sy = 0;
  for (let i = 0; i < n; i++) {
    sx += xs[i]!;
    sy += ys[i]!;
  }
  const mx = sx / n;
  const my = sy / n;
  let sxx = 0;
  let sxy = 0;
  for (let i = 0; i < n; i++) {
    sxx += (xs[i]! - mx) ** 2;
    sxy += (xs[i]! - mx) * (ys[i]! - my);
  }
  if (!(sxx > 0)) return null;
  const slope = sxy / sxx;
  const intercept = my - slope * mx;
  let sse = 0;
  for (let i = 0; i < n; i++) sse += (ys[i]! - intercept - slope * xs[i]!) ** 2;
  return { intercept, slope, slopeError: Math.sqrt(sse / Math.max(1, n - 2) / sxx), n };
}

/** TPOT against two regressors: the decode batch and the share of the decode with a prompt in prefill. */
export interface Plane {
  intercept: number;
  /** Per sequence in the batch. */
  slope: number;
  /** Per unit of prefill share (a whole decode beside prompts in prefill). */
  perShare: number;
  /** Standard error of perShare. */
  perShareError: number;
  n: number;
}

/** Points whose residual is this many robust standard deviations (1.4826 · MAD) out are dropped before the refit. */
const PLANE_TRIM = 4;

/**
 * Least squares y = intercept + slope · x + perShare · z, fitted twice: the second time
 * without the points the first fit left far out (a stalled step, a garbage-collection pause),
 * as the median line ignores them. Null under 10 points or with x and z collinear.
 */
export function fitPlane(xs: readonly number[], zs: readonly number[], ys: readonly number[]): Plane | null {
  const once = (idx: readonly number[]) => {
    const n = idx.length;
    if (n < 10) return null;
    let mx = 0, mz = 0, my = 0;
    for (const i of idx) {
      mx += xs[i]!;
      mz += zs[i]!;
      my += ys[i]!;
    }
    mx /= n;
    mz /= n;
    my /= n;
    let sxx = 0, szz = 0, sxz = 0, sxy = 0, szy = 0;
    for (const i of idx) {
      const x = xs[i]! - mx, z = zs[i]! - mz, y = ys[i]! - my;
      sxx += x * x;
      szz += z * z;
      sxz += x * z;
      sxy += x * y;
      szy += z * y;
    }
    const det = sxx * szz - sxz * sxz;
    if (!(det > 1e-12 * Math.max(1e-300, sxx * szz))) return null;
    const slope = (szz * sxy - sxz * szy) / det;
    const perShare = (sxx * szy - sxz * sxy) / det;
    const intercept = my - slope * mx - perShare * mz;
    const residuals = idx.map((i) => ys[i]! - intercept - slope * xs[i]! - perShare * zs[i]!);
    const sse = residuals.reduce((a, r) => a + r * r, 0);
    const perShareError = Math.sqrt((sse / Math.max(1, n - 3)) * (sxx / det));
    return { plane: { intercept, slope, perShare, perShareError, n }, residuals };
  };
  const all = xs.map((_, i) => i);
  const first = once(all);
  if (first === null) return null;
  const centre = medianOf(first.residuals);
  const spread = 1.4826 * medianOf(first.residuals.map((r) => Math.abs(r - centre)));
  if (!(spread > 0)) return first.plane;
  const kept = all.filter((_, j) => Math.abs(first.residuals[j]! - centre) <= PLANE_TRIM * spread);
  return once(kept)?.plane ?? first.plane;
}

/**
 * A line through the medians of `bins` equal-count slices of the points (sorted by x): one
 * stalled step or garbage-collection pause makes a TPOT an outlier, and the median of its
 * slice ignores it where least squares would not.
 */
export function medianLine(xs: readonly number[], ys: readonly number[], bins = 10): Line | null {
  const n = xs.length;
  const k = Math.max(3, Math.min(bins, Math.floor(n / 5)));
  if (n < 3 * 3) return fitLine(xs, ys);
  const order = xs.map((_, i) => i).sort((a, b) => xs[a]! - xs[b]!);
  const mx: number[] = [];
  const my: number[] = [];
  for (let b = 0; b < k; b++) {
    const slice = order.slice(Math.floor((b * n) / k), Math.floor(((b + 1) * n) / k));
    if (slice.length === 0) continue;
    mx.push(medianOf(slice.map((i) => xs[i]!)));
    my.push(medianOf(slice.map((i) => ys[i]!)));
  }
  const line = fitLine(mx, my);
  return line && { ...line, n };
}

function medianOf(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** Piecewise-constant count of open intervals, with its running integral (ms · requests). */
class Occupancy {
  private readonly times: number[] = [];
  private readonly levels: number[] = [];
  private readonly integral: number[] = [];

  constructor(intervals: readonly [number, number][]) {
    const events: [number, number][] = [];
    for (const [a, b] of intervals) {
      if (!(b > a)) continue;
      events.push([a, 1], [b, -1]);
    }
    events.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
    let level = 0;
    let area = 0;
    let last = events.length ? events[0]![0] : 0;
    for (const [t, d] of events) {
      area += level * (t - last);
      last = t;
      level += d;
      if (this.times.length && this.times[this.times.length - 1] === t) {
        this.levels[this.levels.length - 1] = level;
        continue;
      }
      this.times.push(t);
      this.levels.push(level);
      this.integral.push(area);
    }
  }

  /** ∫ count dt from the first event to t. */
  areaTo(t: number): number {
    const ts = this.times;
    if (ts.length === 0 || t <= ts[0]!) return 0;
    let lo = 0;
    let hi = ts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (ts[mid]! <= t) lo = mid;
      else hi = mid - 1;
    }
    return this.integral[lo]! + this.levels[lo]! * (t - ts[lo]!);
  }

  /** Time-average count over [a, b]. */
  meanOver(a: number, b: number): number {
    return b > a ? (this.areaTo(b) - this.areaTo(a)) / (b - a) : 0;
  }
}

export interface Observation {
  /** The requests far enough from both ends of the window that everything they overlapped is known. */
  usable: Observed[];
  /** Time-average decode batch over the usable span. */
  meanBatch: number;
  /** The usable span, ms. */
  spanMs: number;
  /** Share of the usable span during which some prompt was in prefill. */
  prefillBusy: number;
}

/**
 * The observation over a window [from, to] (Unix ms): requests are usable when every request
 * that could have overlapped them has finished by `to` and started after `from` (a margin of
 * the longest E2E seen at each end).
 */
export function observe(requests: readonly HeadroomRequest[], from: number, to: number): Observation {
  const sorted = [...requests].sort((a, b) => a.start - b.start);
  const margin = Math.max(0, ...sorted.map((r) => r.e2e * 1000));
  const lo = from + margin;
  const hi = to - margin;
  const decode = new Occupancy(sorted.map((r) => [r.start + r.ttft * 1000, r.start + r.e2e * 1000]));
  // Lindley's decomposition first: each request's wait, and its service interval (in prefill).
  const waits: number[] = [];
  const inPrefill: [number, number][] = [];
  let lastFirstToken = -Infinity;
  for (const r of sorted) {
    const first = r.start + r.ttft * 1000;
    const wait = Math.min(r.ttft, Math.max(0, (lastFirstToken - r.start) / 1000));
    lastFirstToken = Math.max(lastFirstToken, first);
    waits.push(wait);
    inPrefill.push([r.start + wait * 1000, first]);
  }
  const prefill = new Occupancy(union(inPrefill));
  const usable: Observed[] = [];
  sorted.forEach((r, i) => {
    if (r.start < lo || r.start + r.e2e * 1000 > hi) return;
    const first = r.start + r.ttft * 1000;
    const end = r.start + r.e2e * 1000;
    const wait = waits[i]!;
    const tpot = r.outputTokens >= 2 && r.e2e > r.ttft ? (r.e2e - r.ttft) / (r.outputTokens - 1) : null;
    usable.push({
      ttft: r.ttft, tpot, outputTokens: r.outputTokens, inputTokens: r.inputTokens, batch: decode.meanOver(first, end),
      prefillShare: prefill.meanOver(first, end), wait, service: r.ttft - wait,
    });
  });
  return { usable, meanBatch: hi > lo ? decode.meanOver(lo, hi) : 0, spanMs: Math.max(0, hi - lo), prefillBusy: hi > lo ? prefill.meanOver(lo, hi) : 0 };
}

/** The union of intervals, as disjoint intervals: the time some prompt is in prefill, counted once. */
function union(intervals: readonly [number, number][]): [number, number][] {
  const sorted = intervals.filter(([a, b]) => b > a).sort((x, y) => x[0] - y[0]);
  const out: [number, number][] = [];
  for (const [a, b] of sorted) {
    const last = out[out.length - 1];
    if (last && a <= last[1]) last[1] = Math.max(last[1], b);
    else out.push([a, b]);
  }
  return out;
}

/** The q-quantile of a list (exact order statistic, as the bottleneck signals use). */
export function quantileOf(xs: readonly number[], q: number): number | null {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
}

export function meanOf(xs: readonly number[]): number {
  return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0;
}
