/**
 * How many of the target's tokens our synthetic text makes: before the replay, two prompts
 * of known length per API and model (max_tokens 1), read back through the engine's own
 * `usage.prompt_tokens`. A straight line through the two gives characters per token (the
 * tokenizer) and the tokens the API's template adds (chat's role markers, a BOS token). The
 * simulator counts 4 characters per token; real tokenizers cut our words into fewer tokens
 * (docs/bench.md gives the lengths measured on each).
 */
import type { ApiName } from '../../record/routes.js';
import { fnv1a } from '../../sim/text.js';
import { ESTIMATED_SCALE, wordText, type TokenScale } from './prompts.js';

export interface Probe {
  chars: number;
  /** The engine's usage.prompt_tokens; null when it gave none (or the request failed). */
  promptTokens: number | null;
  error: string | null;
}

export interface Calibration extends TokenScale {
  api: ApiName;
  model: string | null;
  probes: Probe[];
  /** Why the estimate (4 characters per token, no template) stands in; null when measured. */
  fallback: string | null;
}

/** Sends one prompt with max_tokens 1; answers the engine's prompt token count. */
export type ProbeSend = (api: ApiName, model: string | null, prompt: string) => Promise<{ promptTokens: number | null; error: string | null }>;

/** The short probe, in estimated tokens; the long one is as long as the workload's longest prompt, within these bounds. */
const SHORT = 32;
const LONG = { min: 128, max: 2048 };

/** One calibration per API and model the workload asks for; `longest` bounds the long probe. */
export async function calibrate(pairs: readonly { api: ApiName; model: string | null; longest: number }[], send: ProbeSend): Promise<Calibration[]> {
  const out: Calibration[] = [];
  for (const { api, model, longest } of pairs) {
    const sizes = [SHORT, Math.max(LONG.min, Math.min(LONG.max, longest))].map((t) => t * ESTIMATED_SCALE.charsPerToken);
    const probes: Probe[] = [];
    for (const chars of sizes) {
      const prompt = wordText(fnv1a(`calibrate|${api}|${model ?? ''}|${chars}`), chars);
      const r = await send(api, model, prompt);
      probes.push({ chars, promptTokens: r.promptTokens, error: r.error });
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
    return { ...ESTIMATED_SCALE, fallback: `no prompt token count from the target${failed?.error ? ` (${failed.error})` : ''}: ${ESTIMATED_SCALE.charsPerToken} characters per token assumed` };
  }
  const dt = b.promptTokens! - a.promptTokens!;
  if (!(dt > 0)) return { ...ESTIMATED_SCALE, fallback: `the target counted ${a.promptTokens} and ${b.promptTokens} tokens for ${a.chars} and ${b.chars} characters: ${ESTIMATED_SCALE.charsPerToken} characters per token assumed` };
  const charsPerToken = (b.chars - a.chars) / dt;
  return { charsPerToken, overhead: Math.max(0, Math.round(a.promptTokens! - a.chars / charsPerToken)), fallback: null };
}

/** The scale of one request: its API and model's calibration, else the estimate. */
export function scaleFor(calibrations: readonly Calibration[] | null, api: ApiName, model: string | null): TokenScale {
  return calibrations?.find((c) => c.api === api && c.model === model) ?? ESTIMATED_SCALE;
}
