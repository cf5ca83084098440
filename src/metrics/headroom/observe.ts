/**
 * What the headroom model reads off one model's finished requests (docs/headroom.md,
 * "Inputs"), with nothing but the request records:
 *
 * - the decode batch each request shared: from every request's first and last token the
 *   number decoding at each instant is known exactly (Little's law made concrete), and each
 *   request's TPOT is set against the mean of that number over its own decode;
 * - how TPOT grows with that batch: a least-squares line, TPOT = base + slope · batch;
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
  const usable: Observed[] = [];
  let lastFirstToken = -Infinity;
  for (const r of sorted) {
    const first = r.start + r.ttft * 1000;
    const wait = Math.min(r.ttft, Math.max(0, (lastFirstToken - r.start) / 1000));
    lastFirstToken = Math.max(lastFirstToken, first);
    if (r.start < lo || r.start + r.e2e * 1000 > hi) continue;
    const end = r.start + r.e2e * 1000;
    const tpot = r.outputTokens >= 2 && r.e2e > r.ttft ? (r.e2e - r.ttft) / (r.outputTokens - 1) : null;
    usable.push({ ttft: r.ttft, tpot, outputTokens: r.outputTokens, inputTokens: r.inputTokens, batch: decode.meanOver(first, end), wait, service: r.ttft - wait });
  }
  return { usable, meanBatch: hi > lo ? decode.meanOver(lo, hi) : 0, spanMs: Math.max(0, hi - lo) };
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
