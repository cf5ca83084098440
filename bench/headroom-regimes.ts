/**
 * The regimes the headroom estimate is judged in (docs/headroom.md, "Accuracy"): each a
 * simulator shape, a request mix and SLOs, in simulated time. The runner (headroom-run.ts)
 * divides every duration by --speed and multiplies every rate by it.
 */
import type { ApiName } from '../src/record/routes.js';

export interface MixEntry {
  api: ApiName;
  /** Share of requests (the entries' weights are normalised). */
  weight: number;
  /** Prompt tokens, drawn uniformly in [min, max]. */
  prompt: [number, number];
  /** Output tokens (max_tokens with ignore_eos), drawn uniformly in [min, max]. */
  output: [number, number];
}

export interface HeadroomRegime {
  name: string;
  what: string;
  /** `infermeter simulate` flags (simulated milliseconds). */
  sim: string[];
  mix: MixEntry[];
  /** P99 SLO thresholds, simulated seconds. */
  slos: { ttft?: number; tpot?: number; e2e?: number };
  /** Where to start and how far to step the sweep for the knee, simulated req/s. */
  sweep: { from: number; to: number };
  /**
   * The knee the sweep found (simulated req/s) in the run docs/headroom.md quotes: the tests
   * read the estimate against it rather than sweeping again (minutes), and the bench
   * script measures it anew.
   */
  knee: number;
}

export const REGIMES: readonly HeadroomRegime[] = [
  {
    name: 'decode',
    what: 'decode-bound: many short prompts, each sequence in the batch slows every step (TPOT = 20 ms + 2 ms × batch)',
    sim: ['--decode-step-ms', '20', '--step-per-seq-ms', '2'],
    mix: [{ api: 'chat', weight: 1, prompt: [16, 64], output: [32, 96] }],
    slos: { tpot: 0.06, ttft: 1 },
    sweep: { from: 2, to: 8 },
    knee: 4.5,
  },
  {
    name: 'kv_cache',
    what: 'KV-bound: long prompts and outputs in a 24k-token KV cache (about 20 sequences fit)',
    sim: ['--decode-step-ms', '20', '--step-per-seq-ms', '0.5', '--kv-cache-tokens', '24000', '--max-model-len', '4096'],
    mix: [{ api: 'chat', weight: 1, prompt: [800, 1200], output: [300, 500] }],
    slos: { ttft: 2, tpot: 0.2 },
    sweep: { from: 0.6, to: 2.4 },
    knee: 1.3,
  },
  {
    name: 'prefill',
    what: 'prefill-bound: 1500-2500-token prompts through a 512-token step budget at 4000 prompt tokens/s',
    sim: ['--decode-step-ms', '20', '--step-per-seq-ms', '0.5', '--max-num-batched-tokens', '512', '--prefill-tps', '4000'],
    mix: [{ api: 'chat', weight: 1, prompt: [1500, 2500], output: [16, 32] }],
    slos: { ttft: 2.5, tpot: 0.5 },
    sweep: { from: 0.5, to: 2 },
    knee: 1.2,
  },
  {
    name: 'mixed',
    what: 'a mixed-API mix: short chat, long-prompt completions, Anthropic Messages and OpenAI Responses',
    sim: ['--decode-step-ms', '20', '--step-per-seq-ms', '1'],
    mix: [
      { api: 'chat', weight: 4, prompt: [16, 64], output: [48, 128] },
      { api: 'completions', weight: 2, prompt: [400, 800], output: [16, 32] },
      { api: 'messages', weight: 2, prompt: [64, 256], output: [64, 160] },
      { api: 'responses', weight: 2, prompt: [128, 512], output: [32, 96] },
    ],
    slos: { ttft: 1, tpot: 0.07, e2e: 10 },
    sweep: { from: 2, to: 10 },
    knee: 5,
  },
];
