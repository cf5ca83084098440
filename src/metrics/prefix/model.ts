/**
 * The prefix-cache model (docs/prefix-cache.md): what a cache would have reused of the prompts
 * infermeter saw, asked of two caches fed the same blocks in arrival order.
 *
 * - `UnboundedPrefixSet`: every block ever seen stays cached, the most any prefix cache could
 *   reuse. Bounded in memory all the same: past `cap` blocks it keeps only the blocks whose
 *   spread (a uniform hash of the id, in [0, 1)) is below a rate that halves each time the set
 *   outgrows its cap, and scales what it finds by 1 / rate (SHARDS-style spatial sampling).
 *   Prefix ids are chained (block k's id names the whole prefix through block k), so a block
 *   seen before means every block before it was seen too: the leading run of sampled blocks
 *   estimates the leading run of all of them without bias.
 * - `SizedPrefixCache`: a cache of the engine's size in blocks, least recently used out, on the
 *   simulator's own pool (lib/block-pool.ts, vLLM V1's rules): a request takes blocks for its
 *   whole context while it runs, and blocks held by running requests are never evicted.
 *
 * Hashes only: a key is a prefix id (or a namespaced one), never a prompt.
 */
import { BlockPool } from '../../lib/block-pool.js';

/** Blocks the unbounded set holds before it samples, by default: about 64 MiB of keys. */
export const UNBOUNDED_CAP = 1 << 20;

export class UnboundedPrefixSet<K> {
  /**
   * key → its spread plus the whole second it was last seen at (since the set began): the
   * fraction drops keys above a lower rate, the whole part expires keys older than the window.
   * Insertion order is last-seen order when windowed (a key seen again moves to the end).
   */
  private readonly seen = new Map<K, number>();
  private kept = 1;
  private origin: number | null = null;

  /** `windowMs`: a block counts only if seen within it (Infinity: ever). */
  constructor(
    readonly cap: number = UNBOUNDED_CAP,
    readonly windowMs: number = Infinity,
  ) {
    if (!Number.isInteger(cap) || cap < 1) throw new Error(`UnboundedPrefixSet: cap must be a whole number ≥ 1, got ${cap}`);
    if (!(windowMs >= 1000)) throw new Error(`UnboundedPrefixSet: windowMs must be at least 1000, got ${windowMs}`);
  }

  /** The share of blocks tracked: 1 until the set first outgrew its cap. */
  get rate(): number {
    return this.kept;
  }

  get size(): number {
    return this.seen.size;
  }

  /**
   * One prompt's blocks in order (`spreads[i]` the uniform hash of `keys[i]`, `tokens[i]` its
   * tokens), arriving at `atMs` (monotone; only read when windowed): returns the tokens of its
   * leading run of blocks seen before (within the window; estimated once sampling), then
   * remembers them.
   */
  admit(keys: readonly K[], spreads: readonly number[], tokens: readonly number[], atMs = 0): number {
    const windowed = this.windowMs !== Infinity;
    let second = 0;
    if (windowed) {
      this.origin ??= atMs;
      second = Math.max(0, Math.floor((atMs - this.origin) / 1000));
      this.expire(second - Math.ceil(this.windowMs / 1000));
    }
    let hit = 0;
    let leading = true;
    for (let i = 0; i < keys.length; i++) {
      const s = spreads[i]!;
      if (s >= this.kept) continue;
      const k = keys[i]!;
      if (leading && this.seen.has(k)) hit += tokens[i]!;
      else leading = false;
      if (windowed) this.seen.delete(k);
      this.seen.set(k, second + s);
    }
    while (this.seen.size > this.cap) {
      this.kept /= 2;
      for (const [k, v] of this.seen) if (v - Math.floor(v) >= this.kept) this.seen.delete(k);
    }
    return hit / this.kept;
  }

  /** Drops keys last seen before `second` (the oldest come first). */
  private expire(second: number): void {
    for (const [k, v] of this.seen) {
      if (v >= second) return;
      this.seen.delete(k);
    }
  }
}

/** What one request holds in a SizedPrefixCache until it ends: cached blocks it references and private ones. */
export interface Holding<K> {
  shared: K[];
  own: number;
}

export class SizedPrefixCache<K> {
  private readonly pool: BlockPool<K>;
  /** Requests that found fewer free blocks than their context needs (running requests held the rest): modelled with what was free. */
  overflows = 0;

  constructor(readonly blocks: number) {
    if (!Number.isInteger(blocks) || blocks < 1) throw new Error(`SizedPrefixCache: blocks must be a whole number ≥ 1, got ${blocks}`);
    this.pool = new BlockPool<K>(blocks, true);
  }

  /** Blocks running requests hold. */
  get heldBlocks(): number {
    return this.pool.usedBlocks;
  }

  /** Blocks with an id: held or evictable. */
  get cachedBlocks(): number {
    return this.pool.cachedBlocks;
  }

  /**
   * A request starts. `ids`: its cacheable blocks' ids, in order; `limit`: the most blocks it may
   * find cached (vLLM computes the last prompt token always, so a whole-prompt hit leaves one
   * block); `contextBlocks`: what its prompt and output take while it runs. Returns the leading
   * blocks found cached and what it holds until `end`; its computed blocks become cached.
   */
  begin(ids: readonly K[], limit: number, contextBlocks: number): { hit: number; holding: Holding<K> } {
    const hit = this.pool.match(ids, limit);
    this.pool.acquire(ids, hit);
    let fresh = Math.max(0, contextBlocks - hit);
    if (fresh > this.pool.freeBlocks) {
      this.overflows++;
      fresh = this.pool.freeBlocks;
    }
    this.pool.allocate(fresh);
    const holding: Holding<K> = { shared: ids.slice(0, hit), own: fresh };
    for (let i = hit; i < ids.length && holding.own > 0; i++) {
      // An id cached already (another request computed it meanwhile) leaves this block a private copy.
      if (!this.pool.register(ids[i]!)) continue;
      holding.own--;
      holding.shared.push(ids[i]!);
    }
    return { hit, holding };
  }

  /** The request ended: its blocks stay cached, evictable, most recently used last. */
  end(holding: Holding<K>): void {
    this.pool.release(holding.own, holding.shared);
  }
}

/** A uniform spread in [0, 1) for a prefix id in a namespace: murmur3's finalizer over both halves. */
export function spreadOf(id: number, namespace = 0): number {
  const lo = id % 0x1_0000_0000;
  const hi = Math.floor(id / 0x1_0000_0000);
  return (fmix32(lo ^ fmix32(hi + Math.imul(namespace, 0x9e3779b1))) >>> 0) / 0x1_0000_0000;
}

function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}
