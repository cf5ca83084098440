/**
 * Fixed inputs: prompts of a fixed length. The built-in corpus draws words from the
 * simulator's vocabulary with a seeded generator, so a seed gives the same prompts on every
 * machine; each prompt starts differently, so no prompt is a cached prefix of another.
 * Length is estimated at CHARS_PER_TOKEN characters per token (English text with
 * Llama-family tokenizers); the report records the estimate and the server's own count
 * (usage.prompt_tokens), so the difference is visible.
 */
import { readFileSync } from 'node:fs';
import { CHARS_PER_TOKEN, TOKENS, nextToken, prng } from '../sim/text.js';

export const TOKEN_ESTIMATE = `${CHARS_PER_TOKEN} characters per token`;

export interface PromptSet {
  source: string;
  count: number;
  prompt(index: number): string;
}

export function syntheticPrompts(inputTokens: number, seed: number): PromptSet {
  const chars = inputTokens * CHARS_PER_TOKEN;
  return {
    source: `synthetic (seed ${seed}, ${TOKEN_ESTIMATE})`,
    count: Infinity,
    prompt(index: number): string {
      const rand = prng(seed * 1_000_003 + index + 1);
      let text = `[${index}]`;
      while (text.length < chars) text += TOKENS[nextToken(rand)]!;
      return text.slice(0, chars);
    },
  };
}

/** One prompt per line, or JSONL with a "prompt" or "text" string field; used in order, cycling. */
export function filePrompts(path: string): PromptSet {
  const prompts = parsePromptLines(readFileSync(path, 'utf8'));
  if (prompts.length === 0) throw new Error(`--prompts ${path}: no prompts in the file`);
  return { source: `file ${path} (${prompts.length} prompts)`, count: prompts.length, prompt: (i) => prompts[i % prompts.length]! };
}

export function parsePromptLines(text: string): string[] {
  const out: string[] = [];
  for (const line of text.split(/\r?\n/)) {
    const t = line.trim();
    if (t === '') continue;
    if (t.startsWith('{')) {
      try {
        const doc = JSON.parse(t) as Record<string, unknown>;
        const p = doc['prompt'] ?? doc['text'];
        if (typeof p === 'string') {
          out.push(p);
          continue;
        }
      } catch {
        // not JSON: a prompt that starts with "{"
      }
    }
    out.push(line);
  }
  return out;
}
