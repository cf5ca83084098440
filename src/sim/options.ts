/**
 * Every simulator option in one table: flag, default, parser. The `simulate` command and
 * docs/simulator.md follow from it; `startSimulator()` takes the same keys in code.
 * Defaults mimic a 7B model on one A100 under vLLM V1 (see docs/simulator.md).
 */
import { ConfigError } from '../lib/errors.js';
import { oneOf, parseBool, parseHostPort, parseList, parsePositiveInt, type HostPort } from '../lib/parse.js';

export const METRICS_FORMATS = ['v1', 'v0'] as const;
export const TOOL_CALL_MODES = ['auto', 'always', 'never'] as const;
export const REASONING_FIELDS = ['reasoning', 'reasoning_content'] as const;
export type ReasoningField = (typeof REASONING_FIELDS)[number];

export interface SimOptions {
  listen: HostPort;
  models: string[];
  seed: number;
  /** Divides every simulated duration; Infinity runs steps back to back with no simulated time. */
  speed: number;
  decodeStepMs: number;
  stepPerSeqMs: number;
  prefillTps: number;
  maxNumSeqs: number;
  /** Most requests waiting at once; one more is refused with queueFullStatus (0: no limit). */
  maxNumQueuedReqs: number;
  queueFullStatus: number;
  maxNumBatchedTokens: number;
  kvCacheTokens: number;
  /** vLLM's --num-gpu-blocks-override: KV-cache blocks, when > 0 (replaces --kv-cache-tokens). */
  numGpuBlocksOverride: number;
  blockSize: number;
  prefixCaching: boolean;
  maxModelLen: number;
  /** Length (in tokens) at which a reply ends by itself ("stop"), drawn per request in [min, max]. */
  outputTokens: [number, number];
  tokensPerChunk: number;
  /** null: no reasoning output. */
  reasoning: ReasoningField | null;
  toolCalls: (typeof TOOL_CALL_MODES)[number];
  errorRate: number;
  midstreamErrorRate: number;
  dropRate: number;
  metricsFormat: (typeof METRICS_FORMATS)[number];
  /** usage.prompt_tokens_details.cached_tokens, as vLLM's --enable-prompt-tokens-details reports it. */
  promptTokensDetails: boolean;
  /** vLLM's --enable-per-request-metrics: a top-level `metrics` object of the request's own timing (PerRequestTiming). */
  perRequestMetrics: boolean;
  /** usage.completion_tokens_details.reasoning_tokens, in OpenAI's shape. */
  reasoningTokensDetails: boolean;
  version: string;
}

interface OptionSpec {
  key: keyof SimOptions;
  flag: string;
  help: string;
  default: string;
  parse: (value: string) => unknown;
}

export const SIM_OPTIONS: readonly OptionSpec[] = [
  { key: 'listen', flag: '--listen <host:port>', help: 'address to serve on (port 0 picks a free one)', default: '127.0.0.1:8000', parse: (v) => parseHostPort(v, '127.0.0.1') },
  { key: 'models', flag: '--models <list>', help: 'comma-separated served model names (metrics use the first, as vLLM does)', default: 'meta-llama/Llama-2-7b-chat-hf', parse: nonEmptyList },
  { key: 'seed', flag: '--seed <n>', help: 'seed for generated text, ids, lengths and injected faults', default: '1', parse: nonNegativeInt },
  { key: 'speed', flag: '--speed <x>', help: 'divide every simulated duration by x (10 = ten times faster; "max" = no simulated time)', default: '1', parse: parseSpeed },
  { key: 'decodeStepMs', flag: '--decode-step-ms <ms>', help: 'base time of one engine step (one forward pass)', default: '45', parse: nonNegative },
  { key: 'stepPerSeqMs', flag: '--step-per-seq-ms <ms>', help: 'time each sequence in the batch adds to a step', default: '0.15', parse: nonNegative },
  { key: 'prefillTps', flag: '--prefill-tps <n>', help: 'prefill speed in prompt tokens per second (0 = instantaneous)', default: '8000', parse: nonNegative },
  { key: 'maxNumSeqs', flag: '--max-num-seqs <n>', help: 'most sequences running at once; the rest wait', default: '256', parse: parsePositiveInt },
  { key: 'maxNumQueuedReqs', flag: '--max-num-queued-reqs <n>', help: 'most requests waiting at once: one more is refused, after its body was read, with --queue-full-status (0: no limit)', default: '0', parse: nonNegativeInt },
  { key: 'queueFullStatus', flag: '--queue-full-status <code>', help: 'the status of a request refused by --max-num-queued-reqs: 503 or 429', default: '503', parse: (v) => {
    if (v !== '503' && v !== '429') throw new Error(`expected 503 or 429, got "${v}"`);
    return Number(v);
  } },
  { key: 'maxNumBatchedTokens', flag: '--max-num-batched-tokens <n>', help: 'token budget of one step (chunked prefill)', default: '2048', parse: parsePositiveInt },
  { key: 'kvCacheTokens', flag: '--kv-cache-tokens <n>', help: 'KV-cache capacity in tokens (rounded down to whole blocks)', default: '112000', parse: parsePositiveInt },
  { key: 'numGpuBlocksOverride', flag: '--num-gpu-blocks-override <n>', help: 'KV-cache capacity in blocks, as vLLM\'s flag of that name (0: use --kv-cache-tokens)', default: '0', parse: nonNegativeInt },
  { key: 'blockSize', flag: '--block-size <n>', help: 'KV-cache block size in tokens', default: '16', parse: parsePositiveInt },
  { key: 'prefixCaching', flag: '--prefix-caching <bool>', help: 'reuse KV blocks of repeated block-aligned prompt prefixes', default: 'true', parse: parseBool },
  { key: 'maxModelLen', flag: '--max-model-len <n>', help: 'context length: prompt + max_tokens beyond it is a 400', default: '8192', parse: parsePositiveInt },
  { key: 'outputTokens', flag: '--output-tokens <min-max>', help: 'natural reply length in tokens when max_tokens does not stop it first', default: '64-512', parse: parseRange },
  { key: 'tokensPerChunk', flag: '--tokens-per-chunk <n>', help: 'tokens per decode step and chunk (speculative decoding)', default: '1', parse: parsePositiveInt },
  { key: 'reasoning', flag: '--reasoning [field]', help: `emit reasoning deltas before content, in field ${REASONING_FIELDS.join(' or ')} ("reasoning" if no field given)`, default: 'off', parse: parseReasoning },
  { key: 'toolCalls', flag: '--tool-calls <mode>', help: 'answer chat with a tool call: auto (when the request has tools), always, never', default: 'auto', parse: oneOf(TOOL_CALL_MODES) },
  { key: 'errorRate', flag: '--error-rate <p>', help: 'fraction of generation requests answered with HTTP 500', default: '0', parse: probability },
  { key: 'midstreamErrorRate', flag: '--midstream-error-rate <p>', help: 'fraction of streams that end with an {"error":...} event', default: '0', parse: probability },
  { key: 'dropRate', flag: '--drop-rate <p>', help: 'fraction of streams whose connection is dropped mid-stream', default: '0', parse: probability },
  { key: 'metricsFormat', flag: '--metrics-format <format>', help: 'v1: metric names of vLLM V1 (engine label); v0: the older names', default: 'v1', parse: oneOf(METRICS_FORMATS) },
  { key: 'perRequestMetrics', flag: '--enable-per-request-metrics <bool>', help: 'add vLLM\'s per-request `metrics` object (queue_time_ms, time_to_first_token_ms from scheduling, generation_time_ms, mean_itl_ms, tokens_per_second: the engine\'s own times) to non-streamed bodies, the final usage chunk of a stream, and the response in response.completed', default: 'false', parse: parseBool },
  { key: 'promptTokensDetails', flag: '--enable-prompt-tokens-details <bool>', help: 'report usage.prompt_tokens_details.cached_tokens (the prompt tokens the prefix cache served), as vLLM does with this flag', default: 'false', parse: parseBool },
  { key: 'reasoningTokensDetails', flag: '--reasoning-tokens-details <bool>', help: 'report usage.completion_tokens_details.reasoning_tokens (the reasoning tokens of the reply), in OpenAI\'s shape', default: 'false', parse: parseBool },
  { key: 'version', flag: '--vllm-version <version>', help: 'version reported at /version', default: '0.10.1', parse: (v) => v },
];

/** Options from flag-style strings (commander values), defaults for the rest. Throws naming the flag. */
export function resolveSimOptions(given: Partial<Record<keyof SimOptions, unknown>> = {}): SimOptions {
  const out: Record<string, unknown> = {};
  for (const spec of SIM_OPTIONS) {
    const raw = given[spec.key];
    if (raw !== undefined && typeof raw !== 'string' && typeof raw !== 'boolean') {
      out[spec.key] = raw; // already typed (programmatic use)
      continue;
    }
    const text = raw === undefined ? spec.default : raw === true ? '' : String(raw);
    try {
      out[spec.key] = spec.parse(text);
    } catch (err) {
      throw new ConfigError(spec.flag.split(' ')[0]!, (err as Error).message, { cause: err });
    }
  }
  const opts = out as unknown as SimOptions;
  if (opts.outputTokens[0] < 1) throw new ConfigError('--output-tokens', 'the minimum must be at least 1');
  if (opts.numGpuBlocksOverride > 0) opts.kvCacheTokens = opts.numGpuBlocksOverride * opts.blockSize;
  return opts;
}

function nonEmptyList(v: string): string[] {
  const list = parseList(v);
  if (list.length === 0) throw new Error('expected at least one model name');
  return list;
}

function nonNegative(v: string): number {
  const n = Number(v.trim());
  if (v.trim() === '' || !Number.isFinite(n) || n < 0) throw new Error(`expected a non-negative number, got "${v}"`);
  return n;
}

function nonNegativeInt(v: string): number {
  const n = nonNegative(v);
  if (!Number.isInteger(n)) throw new Error(`expected a whole number, got "${v}"`);
  return n;
}

function probability(v: string): number {
  const n = nonNegative(v);
  if (n > 1) throw new Error(`expected a fraction between 0 and 1, got "${v}"`);
  return n;
}

function parseSpeed(v: string): number {
  if (['max', 'inf', 'infinity'].includes(v.trim().toLowerCase())) return Infinity;
  const n = nonNegative(v);
  if (n === 0) throw new Error('expected a positive number or "max"');
  return n;
}

function parseRange(v: string): [number, number] {
  const m = /^\s*(\d+)\s*(?:-\s*(\d+))?\s*$/.exec(v);
  if (!m) throw new Error(`expected MIN-MAX or N (tokens), got "${v}"`);
  const lo = Number(m[1]);
  const hi = m[2] === undefined ? lo : Number(m[2]);
  if (hi < lo) throw new Error(`expected MIN <= MAX, got "${v}"`);
  return [lo, hi];
}

function parseReasoning(v: string): ReasoningField | null {
  const t = v.trim();
  if (t === 'off' || t === 'false' || t === 'none') return null;
  if (t === '' || t === 'true' || t === 'on') return 'reasoning';
  return oneOf(REASONING_FIELDS)(t);
}
