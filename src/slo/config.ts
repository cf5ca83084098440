/**
 * SLO thresholds from the config file: per model, with a default, and an objective.
 * Plain data (it crosses into the metrics worker by structured clone).
 */
import { z } from 'zod';
import { ConfigError } from '../lib/errors.js';
import { nearest } from '../lib/nearest.js';
import type { BucketSet } from '../lib/metric-def.js';
import { parseDuration } from '../lib/parse.js';

export const SLO_NAMES = ['ttft', 'ttfo', 'tpot', 'e2e'] as const;
export type SloName = (typeof SLO_NAMES)[number];

/** Which histograms' buckets each SLO's threshold becomes a boundary of (the semconv one and its breakdown). */
export const SLO_BUCKET_SET: Record<SloName, readonly BucketSet[]> = {
  ttft: ['ttft', 'ttft_by_prompt'], ttfo: ['ttft', 'ttft_by_prompt'], tpot: ['tpot', 'tpot_by_concurrency'], e2e: ['e2e'],
};

export type Thresholds = Partial<Record<SloName, number>>;

export interface SloConfig {
  /** Target fraction of good requests, e.g. 0.99. */
  objective: number;
  /** Compliance window, e.g. "30d" (for error-budget panels and burn-rate alerts). */
  window: string;
  /** Seconds, per SLO name. */
  default: Thresholds;
  models: Record<string, Thresholds>;
  /**
   * Thresholds for a prompt class only (issue 17), ascending by bound: a request whose prompt
   * (usage.prompt_tokens) is at most `promptTokensLe` tokens, and above the previous entry's
   * bound, is judged against these instead of its model's, under the SLO label
   * `<slo>_prompt_le_<bound>` (see sloLabel). Requests of unknown prompt size use the model's.
   */
  promptClasses: PromptClassSlo[];
}

export interface PromptClassSlo {
  promptTokensLe: number;
  thresholds: Thresholds;
}

/** The `slo` label value of a threshold: the SLO's name, or its name and prompt class. */
export function sloLabel(slo: SloName, promptTokensLe: number | null): string {
  return promptTokensLe === null ? slo : `${slo}_prompt_le_${promptTokensLe}`;
}

/** Every SLO series the config defines: the model/default ones, then each prompt class's. */
export interface SloSeries {
  label: string;
  slo: SloName;
  promptTokensLe: number | null;
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
    prompt_classes: z
      .array(z.object({ prompt_tokens_le: z.number().int().positive(), ttft: duration, ttfo: duration, tpot: duration, e2e: duration }).partial({ ttft: true, ttfo: true, tpot: true, e2e: true }).strict())
      .default([])
      .superRefine((list, ctx) => {
        for (let i = 1; i < list.length; i++) {
          if (!(list[i]!.prompt_tokens_le > list[i - 1]!.prompt_tokens_le)) ctx.addIssue({ code: z.ZodIssueCode.custom, path: [i, 'prompt_tokens_le'], message: 'prompt classes must be listed by strictly ascending prompt_tokens_le' });
        }
      }),
  })
  .strict();

const TOP_KEYS = ['objective', 'window', 'default', 'models', 'prompt_classes'];

/** Unknown keys, each with the known key it is nearest to ("did you mean"), as unknown top-level keys of the file get. */
function unknownKeys(keys: readonly string[], path: readonly PropertyKey[]): string {
  const known = path.length === 0 ? TOP_KEYS : path[0] === 'prompt_classes' ? ['prompt_tokens_le', ...SLO_NAMES] : [...SLO_NAMES];
  const hints = keys.flatMap((k) => {
    const near = nearest(k, known);
    return near ? [`${k}: did you mean ${near}?`] : [];
  });
  return `unknown key(s): ${keys.join(', ')} (expected ${known.join(', ')}${hints.length ? `; ${hints.join('; ')}` : ''})`;
}

export function parseSloConfig(raw: unknown, where: string): SloConfig {
  const r = schema.safeParse(raw ?? {});
  if (!r.success) {
    const issue = r.error.issues[0]!;
    const key = issue.path.length ? `.${issue.path.join('.')}` : '';
    throw new ConfigError(`${where}${key}`, issue.code === 'unrecognized_keys' ? unknownKeys(issue.keys, issue.path) : issue.message);
  }
  const { prompt_classes, ...rest } = r.data;
  return {
    ...rest,
    promptClasses: prompt_classes.map(({ prompt_tokens_le, ...t }) => ({ promptTokensLe: prompt_tokens_le, thresholds: t as Thresholds })),
  } as SloConfig;
}

/** The prompt class SLO entry a request of `promptTokens` (known) falls in, or null. */
export function promptClassFor(slos: SloConfig, promptTokens: number): PromptClassSlo | null {
  // Ascending: the first bound at or above the prompt is its class (above the previous bound).
  for (const c of slos.promptClasses) if (promptTokens <= c.promptTokensLe) return c;
  return null;
}

/** Every SLO series (label value) some request may be judged under. */
export function sloSeries(slos: SloConfig): SloSeries[] {
  const out: SloSeries[] = [];
  for (const slo of SLO_NAMES) {
    if ([slos.default, ...Object.values(slos.models)].some((t) => t[slo] !== undefined)) out.push({ label: slo, slo, promptTokensLe: null });
  }
  for (const c of slos.promptClasses) {
    for (const slo of SLO_NAMES) if (c.thresholds[slo] !== undefined) out.push({ label: sloLabel(slo, c.promptTokensLe), slo, promptTokensLe: c.promptTokensLe });
  }
  return out;
}

/** The thresholds that apply to a model: its own entry over the default. */
export function thresholdsFor(slos: SloConfig, model: string): Thresholds {
  const own = slos.models[model];
  return own ? { ...slos.default, ...own } : slos.default;
}

/** Every threshold that lands in one bucket set, for inserting as histogram boundaries. */
export function thresholdsInBucketSet(slos: SloConfig, set: BucketSet): number[] {
  const out: number[] = [];
  for (const t of [slos.default, ...Object.values(slos.models), ...slos.promptClasses.map((c) => c.thresholds)]) {
    for (const name of SLO_NAMES) if (SLO_BUCKET_SET[name].includes(set) && t[name] !== undefined) out.push(t[name]);
  }
  return out;
}

export function hasSlos(slos: SloConfig): boolean {
  return Object.keys(slos.default).length > 0 || Object.keys(slos.models).length > 0 || slos.promptClasses.length > 0;
}

/** 1 − objective without float noise (1 − 0.99 is 0.010000000000000009). */
export function errorBudget(slos: SloConfig): number {
  return Number((1 - slos.objective).toPrecision(12));
}
