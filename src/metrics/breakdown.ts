/**
 * The bounded breakdown labels (issue 17): prompt-length classes (`prompt_tokens_le`),
 * concurrency bands (`in_flight_le`) and tenants (`tenant`). Each turns an unbounded number or
 * string into one of a fixed, configured set of label values; nothing here grows with traffic
 * beyond the configured limits.
 */

/** Default upper bounds of the prompt classes (tokens); `+Inf` and `unknown` come on top. */
export const DEFAULT_PROMPT_CLASSES = [256, 1024, 4096, 16384, 65536] as const;
/** Default upper bounds of the concurrency bands (requests in flight); `+Inf` comes on top. */
export const DEFAULT_IN_FLIGHT_BANDS = [1, 2, 4, 8, 16, 32, 64, 128, 256] as const;
/** The prompt class of a request whose prompt size the upstream did not report. */
export const UNKNOWN_CLASS = 'unknown';
export const INF = '+Inf';
/** A tenant past --tenant-limit. */
export const OTHER_TENANT = 'other';
/** A request that named no tenant (no header, no bearer token) while tenants are on. */
export const NO_TENANT = 'none';

/** A comma-separated list of positive, strictly ascending bounds; a trailing +Inf is accepted and dropped. */
export function parseBounds(value: string): number[] {
  const parts = value.split(',').map((s) => s.trim()).filter((s) => s !== '');
  // `parts.length > 0` only keeps the test off parts[-1], which as "undefined" never matches
  // anyway (mutation testing: equivalent; kept for readability).
  if (parts.length > 0 && /^\+?inf$/i.test(parts[parts.length - 1]!)) parts.pop();
  if (parts.length === 0) throw new Error(`expected a comma-separated list of positive numbers such as 1,2,4,8, got "${value}"`);
  const out = parts.map((s) => {
    const n = Number(s);
    if (!Number.isFinite(n) || n <= 0) throw new Error(`expected positive numbers, got "${s}" in "${value}"`);
    return n;
  });
  for (let i = 1; i < out.length; i++) if (!(out[i]! > out[i - 1]!)) throw new Error(`expected strictly ascending bounds, got "${value}"`);
  return out;
}

/** Maps a number to the label of the first bound that is >= it (`le` semantics), `+Inf` past the last. */
export class Bands {
  /** Every label value this band set can give, in order. */
  readonly values: readonly string[];
  private readonly bounds: readonly number[];

  constructor(bounds: readonly number[]) {
    this.bounds = bounds;
    this.values = [...bounds.map(String), INF];
  }

  label(n: number): string {
    return this.values[this.index(n)]!;
  }

  /** Index into values of the band holding n. */
  index(n: number): number {
    const b = this.bounds;
    // `i <= b.length` would compare with undefined once more and still fall through to b.length (mutation testing: equivalent).
    for (let i = 0; i < b.length; i++) if (n <= b[i]!) return i;
    return b.length;
  }
}

/** prompt_tokens_le of a record: its class from usage.prompt_tokens, or `unknown`. */
export function promptClass(classes: Bands, r: { inputTokensKnown: boolean; inputTokens: number }): string {
  return r.inputTokensKnown ? classes.label(r.inputTokens) : UNKNOWN_CLASS;
}

/** The settings TenantLabels reads on every call (the metrics side's config object, so a reload can change them). */
export interface TenantSettings {
  tenantFrom: string;
  tenantLimit: number;
}

/**
 * Bounds the tenant label: the first --tenant-limit distinct tenants seen keep their own value
 * for the life of the process; every later one is `other`. First seen rather than top-K: a
 * tenant's series never changes label mid-flight (a top-K that demoted a tenant would split its
 * counters across two series and break rate()), and the set is the same under --workers because
 * one metrics side labels every worker's records. A restart (or a reload that changes the
 * tenant settings: reset()) starts a fresh set.
 */
export class TenantLabels {
  private readonly seen = new Set<string>();
  private limit: number;

  constructor(private readonly settings: TenantSettings) {
    this.limit = settings.tenantLimit;
  }

  /**
   * A reload's --tenant-limit: tenants already labelled keep their label (their series must
   * not move); a higher limit admits new ones, a lower one admits none until restart.
   */
  setLimit(limit: number): void {
    this.limit = limit;
  }

  /** '' when tenants are off (an empty label value is no label at all to Prometheus). */
  label(raw: string | null): string {
    if (this.settings.tenantFrom === 'none') return '';
    const t = raw ?? NO_TENANT;
    if (this.seen.has(t)) return t;
    if (this.seen.size < this.limit) {
      this.seen.add(t);
      return t;
    }
    return OTHER_TENANT;
  }

  /** The tenants that have their own label, for tests and the series-count script. */
  list(): string[] {
    return [...this.seen];
  }

  reset(): void {
    this.seen.clear();
  }
}
