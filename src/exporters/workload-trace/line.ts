/**
 * One line of the workload trace, field by field as docs/workload-trace.md defines it (that
 * page is the contract; the keys are written in its order). Pure: a hashed request in, a
 * JSON object out. Nothing of the prompt is here but its token count and its block ids.
 */
import { blockIds, type PromptBlocks } from '../../lib/block-hash.js';
import { tpotSeconds, type RequestRecord } from '../../record/record.js';
import { routeByLabel } from '../../record/routes.js';

export interface TraceLine {
  timestamp: number;
  input_length: number;
  output_length: number;
  hash_ids: number[];
  input_length_source: 'usage' | 'tokens' | 'chars';
  model: string;
  api: string;
  stream: boolean;
  outcome: string;
  upstream: string | null;
  max_tokens: number | null;
  cached_input_tokens: number | null;
  reasoning_tokens: number | null;
  ttft_ms: number | null;
  tpot_ms: number | null;
  e2e_ms: number | null;
  session: string | null;
}

export interface LineFacts {
  /** The trace's origin, Unix ms. */
  startUnixMs: number;
  blockTokens: number;
  /** Upstream names by index. */
  upstreams: readonly string[];
}

const ms = (seconds: number): number | null => (seconds >= 0 ? Math.round(seconds * 1e6) / 1e3 : null);
const known = (n: number): number | null => (n >= 0 ? n : null);

export function traceLine(r: RequestRecord, blocks: PromptBlocks, extra: { maxTokens: number | null; stream: boolean | null; session: string | null }, facts: LineFacts): TraceLine {
  const input = r.inputTokensKnown ? r.inputTokens : blocks.tokens;
  return {
    timestamp: Math.max(0, Math.round(r.startedAt - facts.startUnixMs)),
    input_length: input,
    output_length: r.tokenSource === 'none' ? 0 : r.outputTokens,
    hash_ids: blockIds(blocks, facts.blockTokens, input),
    input_length_source: r.inputTokensKnown ? 'usage' : blocks.cut,
    model: r.model,
    api: routeByLabel(r.route).api ?? r.route,
    stream: extra.stream ?? r.streamed,
    outcome: r.outcome,
    upstream: facts.upstreams[r.upstream] ?? null,
    max_tokens: extra.maxTokens,
    cached_input_tokens: known(r.cachedInputTokens),
    reasoning_tokens: known(r.reasoningTokens),
    ttft_ms: ms(r.ttft),
    tpot_ms: ms(tpotSeconds(r)),
    e2e_ms: ms(r.e2e),
    session: extra.session,
  };
}
