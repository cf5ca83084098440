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
  /** The model asked for (default headroom-run.ts' MODEL, which the simulator serves). */
  model?: string;
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
  /**
   * What the estimate at 50 % and 70 % of the knee is held to, [below, above] as fractions of
   * the knee, and the limits it may name (docs/headroom.md, "Accuracy"): ±40 % where the model
   * meets its ±20 % target on a quiet machine (the prefill regime too, since TPOT's fit takes the
   * prompts in prefill beside each decode as a second regressor), -70 %..+40 % where it errs low
   * under load (the mixed regime, whose steps stretch on a busy machine). `npm run bench:headroom` fails past it, and
   * test/unit/metrics/headroom-regimes-replay.test.ts replays recorded runs against it. Absent
   * where no bound is claimed (bench/headroom-llama.ts: not met against llama-server).
   */
  bound?: [number, number];
  limits?: readonly string[];
}

export const REGIMES: readonly HeadroomRegime[] = [
  {
    name: 'decode',
    what: 'decode-bound: many short prompts; each sequence in the batch slows every step (60 ms + 6 ms per sequence)',
    sim: ['--decode-step-ms', '60', '--step-per-seq-ms', '6'],
    mix: [{ api: 'chat', weight: 1, prompt: [16, 64], output: [16, 48] }],
    slos: { tpot: 0.18, ttft: 2 },
    sweep: { from: 1.5, to: 8 },
    knee: 2.41,
    bound: [-0.4, 0.4],
    limits: ['decode'],
  },
  {
    name: 'kv_cache',
    what: 'KV-bound: 1000-1400-token prompts and 100-160-token outputs in a 24k-token KV cache (about 19 sequences fit)',
    sim: ['--decode-step-ms', '40', '--step-per-seq-ms', '1', '--kv-cache-tokens', '24000', '--max-model-len', '4096', '--prefill-tps', '16000'],
    mix: [{ api: 'chat', weight: 1, prompt: [1000, 1400], output: [100, 160] }],
    slos: { ttft: 3, tpot: 0.3 },
    sweep: { from: 0.8, to: 5 },
    knee: 1.44,
    bound: [-0.4, 0.4],
    limits: ['kv_cache', 'decode'],
  },
  {
    name: 'prefill',
    what: 'prefill-bound: 1500-2500-token prompts through a 512-token step budget at 4000 prompt tokens/s',
    sim: ['--decode-step-ms', '40', '--step-per-seq-ms', '1', '--max-num-batched-tokens', '512', '--prefill-tps', '4000'],
    mix: [{ api: 'chat', weight: 1, prompt: [1500, 2500], output: [8, 24] }],
    slos: { ttft: 4, tpot: 1 },
    sweep: { from: 0.5, to: 3 },
    knee: 1.12,
    bound: [-0.4, 0.4],
    limits: ['prefill'],
  },
  {
    name: 'mixed',
    what: 'a mixed-API mix: short chat, long-prompt completions, Anthropic Messages and OpenAI Responses',
    sim: ['--decode-step-ms', '60', '--step-per-seq-ms', '4'],
    mix: [
      { api: 'chat', weight: 4, prompt: [16, 64], output: [32, 64] },
      { api: 'completions', weight: 2, prompt: [400, 800], output: [8, 24] },
      { api: 'messages', weight: 2, prompt: [64, 256], output: [32, 64] },
      { api: 'responses', weight: 2, prompt: [128, 512], output: [16, 48] },
    ],
    slos: { ttft: 2, tpot: 0.2, e2e: 12 },
    sweep: { from: 1.5, to: 10 },
    knee: 3.01,
    bound: [-0.7, 0.4],
    limits: ['decode', 'prefill', 'queue', 'kv_cache'],
  },
];
