/**
 * How many of the target's tokens our synthetic text makes: before the replay, two prompts
 * of known length per API and model (max_tokens 1), read back through the engine's own
 * `usage.prompt_tokens`. A straight line through the two gives tokens per word (1 for the
 * tokenizers prompts.ts was measured on; another may split some words) and the tokens the
 * API's template adds (chat's role markers, a BOS token).
 */
import type { ApiName } from '../../record/routes.js';
import { fnv1a } from '../../sim/text.js';
import { ESTIMATED_SCALE, wordText, type TokenScale } from './prompts.js';

export interface Probe {
  words: number;
  /** The engine's usage.prompt_tokens; null when it gave none (or the request failed). */
  promptTokens: number | null;
  error: string | null;
}

export interface Calibration extends TokenScale {
  api: ApiName;
  model: string | null;
  probes: Probe[];
  /** Why the estimate (a token per word, no template) stands in; null when measured. */
  fallback: string | null;
}

/** Sends one prompt with max_tokens 1; answers the engine's prompt token count. */
export type ProbeSend = (api: ApiName, model: string | null, prompt: string) => Promise<{ promptTokens: number | null; error: string | null }>;

/** The short probe, in words; the long one is as long as the workload's longest prompt, within these bounds. */
const SHORT = 32;
const LONG = { min: 128, max: 2048 };

/** One calibration per API and model the workload asks for; `longest` bounds the long probe. */
export async function calibrate(pairs: readonly { api: ApiName; model: string | null; longest: number }[], send: ProbeSend): Promise<Calibration[]> {
  const out: Calibration[] = [];
  for (const { api, model, longest } of pairs) {
    const probes: Probe[] = [];
    for (const words of [SHORT, Math.max(LONG.min, Math.min(LONG.max, longest))]) {
      const r = await send(api, model, wordText(fnv1a(`calibrate|${api}|${model ?? ''}|${words}`), words));
      probes.push({ words, promptTokens: r.promptTokens, error: r.error });
    }
    out.push({ api, model, probes, ...fit(probes) });
  }
  return out;
}

/** The line through two probes; the estimate when they do not give one. */
export function fit(probes: readonly Probe[]): TokenScale & { fallback: string | null } {
  const [a, b] = probes;
  const failed = probes.find((p) => p.promptTokens === null);
  if (!a || !b || failed) {
    return { ...ESTIMATED_SCALE, fallback: `no prompt token count from the target${failed?.error ? ` (${failed.error})` : ''}: a token per word assumed` };
  }
  const dt = b.promptTokens! - a.promptTokens!;
  if (!(dt > 0) || !(b.words > a.words)) return { ...ESTIMATED_SCALE, fallback: `the target counted ${a.promptTokens} and ${b.promptTokens} tokens for ${a.words} and ${b.words} words: a token per word assumed` };
  const tokensPerWord = dt / (b.words - a.words);
  return { tokensPerWord, overhead: Math.max(0, Math.round(a.promptTokens! - a.words * tokensPerWord)), fallback: null };
}

/** The scale of one request: its API and model's calibration, else the estimate. */
export function scaleFor(calibrations: readonly Calibration[] | null, api: ApiName, model: string | null): TokenScale {
  return calibrations?.find((c) => c.api === api && c.model === model) ?? ESTIMATED_SCALE;
}
