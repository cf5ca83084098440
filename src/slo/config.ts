/**
 * SLO thresholds from the config file: per model, with a default, and an objective.
 * Plain data (it crosses into the metrics worker by structured clone).
 */
import { z } from 'zod';
import { ConfigError } from '../errors.js';
import type { BucketSet } from '../metrics/catalog.js';
import { parseDuration } from '../lib/parse.js';

export const SLO_NAMES = ['ttft', 'ttfo', 'tpot', 'e2e'] as const;
export type SloName = (typeof SLO_NAMES)[number];

/** Which histogram each SLO's threshold becomes a boundary of. */
export const SLO_BUCKET_SET: Record<SloName, BucketSet> = { ttft: 'ttft', ttfo: 'ttft', tpot: 'tpot', e2e: 'e2e' };

export type Thresholds = Partial<Record<SloName, number>>;

export interface SloConfig {
  /** Target fraction of good requests, e.g. 0.99. */
  objective: number;
  /** Compliance window, e.g. "30d" (for error-budget panels and burn-rate alerts). */
  window: string;
  /** Seconds, per SLO name. */
  default: Thresholds;
  models: Record<string, Thresholds>;
}

const duration = z.union([z.string(), z.number()]).transform((v, ctx) => {
  try {
    const s = parseDuration(v);
    if (s <= 0) throw new Error('must be greater than 0');
    return s;
  } catch (err) {
    ctx.addIssue({ code: z.ZodIssueCode.custom, message: (err as Error).message });
    return z.NEVER;
  }
});

const thresholds = z.object({ ttft: duration, ttfo: duration, tpot: duration, e2e: duration }).partial().strict();

const schema = z
  .object({
    objective: z.number().gt(0).lt(1).default(0.99),
    window: z.string().regex(/^\d+[dhw]$/, 'expected a window such as 30d, 7d or 4w').default('30d'),
    default: thresholds.default({}),
    models: z.record(z.string().min(1), thresholds).default({}),
  })
  .strict();

export function parseSloConfig(raw: unknown, where: string): SloConfig {
  const r = schema.safeParse(raw ?? {});
  if (!r.success) {
    const issue = r.error.issues[0]!;
    const key = issue.path.length ? `.${issue.path.join('.')}` : '';
    throw new ConfigError(`${where}${key}`, issue.message);
  }
  return r.data as SloConfig;
}

/** The thresholds that apply to a model: its own entry over the default. */
export function thresholdsFor(slos: SloConfig, model: string): Thresholds {
  const own = slos.models[model];
  return own ? { ...slos.default, ...own } : slos.default;
}

/** Every threshold that lands in one bucket set, for inserting as histogram boundaries. */
export function thresholdsInBucketSet(slos: SloConfig, set: BucketSet): number[] {
  const out: number[] = [];
  for (const t of [slos.default, ...Object.values(slos.models)]) {
    for (const name of SLO_NAMES) if (SLO_BUCKET_SET[name] === set && t[name] !== undefined) out.push(t[name]);
  }
  return out;
}

export function hasSlos(slos: SloConfig): boolean {
  return Object.keys(slos.default).length > 0 || Object.keys(slos.models).length > 0;
}
