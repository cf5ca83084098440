/**
 * The prefix-cache models as readers of requests (docs/prefix-cache.md), one interface for
 * both of their callers: `infermeter trace stats` and `bench --replay` feed a recorded trace's
 * requests (bench/replay/stats.ts), the live model feeds the proxy's (live.ts). A request's
 * hit is its leading run of blocks the cache holds: an engine's prefix cache matches
 * prefixes, never a block after a miss.
 */
import { SizedPrefixCache, UnboundedPrefixSet, type Holding } from './model.js';

/** One block of a prompt as a cache sees it: its identity, a uniform hash of it in [0, 1), and its tokens. */
export interface BlockRef<K = string> {
  key: K;
  spread: number;
  tokens: number;
}

/** When a request ran. */
export interface RequestSpan {
  atMs: number;
  /** Its end; null when not known (then it holds nothing after it arrives). */
  endMs: number | null;
  inputTokens: number;
  outputTokens: number;
  /** Tokens per block of its blocks. */
  blockSize: number;
  /** The most leading blocks it may find cached (vLLM computes the last prompt token always); default: all. */
  limit?: number;
}

export interface ReuseModel<K = string> {
  readonly name: string;
  readonly description: string;
  /** Takes one prompt's blocks, in order (then holds them as its policy says); answers its leading hit in tokens. */
  admit(blocks: readonly BlockRef<K>[], span: RequestSpan): number;
  /** Share of blocks the model tracked (1: all of them; below 1: sampled, its figure estimated). */
  readonly rate?: number;
  /** Fed only the requests this upstream served (by name), as they were routed; absent: every request. */
  readonly upstream?: string;
}

/** Every block seen (within `windowMs`, if given) stays cached: the most any prefix cache could reuse. */
export function unboundedCache<K = string>(o: { cap?: number; windowMs?: number } = {}): ReuseModel<K> {
  const set = new UnboundedPrefixSet<K>(o.cap, o.windowMs);
  return {
    name: 'unbounded',
    description: 'every block ever seen stays cached: the most any prefix cache could reuse',
    admit: (blocks, span) => set.admit(blocks.map((b) => b.key), blocks.map((b) => b.spread), blocks.map((b) => b.tokens), span.atMs),
    get rate() {
      return set.rate;
    },
  };
}

/**
 * A cache of `blocks` blocks, least recently used out, each request holding its blocks (its
 * whole context) from its arrival until its end. Requests come in arrival order; one that
 * arrives earlier than the last is taken as arriving then.
 */
export function sizedCache<K = string>(blocks: number, description: string): ReuseModel<K> & { readonly cache: SizedPrefixCache<K> } {
  const cache = new SizedPrefixCache<K>(blocks);
  /** Requests still running at the arrival being admitted, latest end first (pop the earliest). */
  const running: { endMs: number; holding: Holding<K> }[] = [];
  return {
    name: 'engine size',
    description,
    cache,
    admit(refs, span) {
      while (running.length > 0 && running[running.length - 1]!.endMs <= span.atMs) cache.end(running.pop()!.holding);
      const context = Math.ceil((span.inputTokens + span.outputTokens) / span.blockSize);
      const { hit, holding } = cache.begin(refs.map((b) => b.key), Math.min(span.limit ?? refs.length, refs.length), Math.max(context, refs.length));
      if (span.endMs === null || span.endMs <= span.atMs) cache.end(holding);
      else {
        // Sorted by end, latest first: arrivals are in order and most requests end in the order they came.
        let i = running.length;
        while (i > 0 && running[i - 1]!.endMs < span.endMs) i--;
        running.splice(i, 0, { endMs: span.endMs, holding });
      }
      let tokens = 0;
      for (let i = 0; i < hit; i++) tokens += refs[i]!.tokens;
      return tokens;
    },
  };
}
