/**
 * KV-cache blocks with automatic prefix caching, counted rather than stored. Like vLLM V1:
 * a block whose last user leaves keeps its hash and stays reusable until its space is
 * needed (LRU), and usage counts only blocks some running request holds.
 *
 * One pool for both sides of the question: the simulator's engine (src/sim/engine.ts) caches
 * with it, and infermeter's prefix-cache model (src/metrics/prefix/) asks it what a cache of
 * the engine's size would have held (docs/prefix-cache.md). K is the block's hash: the
 * simulator's numbers, the model's prefix ids (tagged by namespace where several traces meet).
 *
 * Memory: a Map entry and, while evictable, a Set entry per cached block (96 bytes per block
 * on Node 24 with number keys, `npm run bench:prefix-model`; docs/prefix-cache.md, "Cost").
 */
export class BlockPool<K = number> {
  /** Blocks held by running requests (own and shared cached ones). */
  private used = 0;
  /** hash → number of running requests holding it (0: cached, evictable). */
  private readonly refs = new Map<K, number>();
  /** Cached blocks nobody holds, oldest first. */
  private readonly evictable = new Set<K>();

  constructor(readonly total: number, private readonly caching: boolean) {}

  get usedBlocks(): number {
    return this.used;
  }

  get freeBlocks(): number {
    return this.total - this.used;
  }

  get cachedBlocks(): number {
    return this.refs.size;
  }

  /** How many leading hashes are cached (held or evictable). */
  match(hashes: readonly K[], limit: number): number {
    if (!this.caching) return 0;
    let n = 0;
    while (n < limit && n < hashes.length && this.refs.has(hashes[n]!)) n++;
    return n;
  }

  /** Takes a reference on the first `n` hashes (all known to be cached, from match()). */
  acquire(hashes: readonly K[], n: number): void {
    for (let i = 0; i < n; i++) {
      const h = hashes[i]!;
      const r = this.refs.get(h)!;
      if (r === 0) {
        this.evictable.delete(h);
        this.used++;
      }
      this.refs.set(h, r + 1);
    }
  }

  /** Allocates `n` fresh blocks, evicting the oldest cached ones as their space is needed. */
  allocate(n: number): boolean {
    if (n > this.total - this.used) return false;
    this.used += n;
    if (this.used + this.evictable.size > this.total) {
      let excess = this.used + this.evictable.size - this.total;
      for (const h of this.evictable) {
        if (excess-- <= 0) break;
        this.evictable.delete(h);
        this.refs.delete(h);
      }
    }
    return true;
  }

  /**
   * Turns one freshly computed own block into a cached one with this hash. False when the
   * hash is cached already (another request computed the same prefix meanwhile): the block
   * then stays a private duplicate.
   */
  register(hash: K): boolean {
    if (!this.caching || this.refs.has(hash)) return false;
    this.refs.set(hash, 1);
    return true;
  }

  /**
   * Gives back `own` private blocks and one reference on each of `shared`. Like vLLM V1's
   * free_blocks, the last block goes into the eviction queue first: a prompt's tail, the part
   * least likely shared, is evicted before its head.
   */
  release(own: number, shared: readonly K[]): void {
    this.used -= own;
    for (let i = shared.length - 1; i >= 0; i--) {
      const h = shared[i]!;
      const r = this.refs.get(h);
      if (r === undefined) continue;
      if (r <= 1) {
        this.refs.set(h, 0);
        this.evictable.add(h);
        this.used--;
      } else this.refs.set(h, r - 1);
    }
  }
}
