/**
 * `npm run bench:prefix-model` (docs/prefix-cache.md, "Cost"): the memory and CPU of the
 * prefix-cache model at 1 M blocks. Fills a cache of the engine's size (SizedPrefixCache) and
 * the unbounded set (UnboundedPrefixSet, capped at 1 M) with prompts of 512 16-token blocks
 * (8 K tokens) of prefix ids, half of each prompt shared with earlier ones, and reports heap
 * bytes per block (after a full GC), resident memory, and ns per block admitted; rounds
 * alternate, medians printed. Run with --expose-gc (the npm script does).
 *   PREFIX_BLOCKS=1048576  PREFIX_ROUNDS=3
 */
import { SizedPrefixCache, UnboundedPrefixSet, spreadOf } from '../src/metrics/prefix/model.js';
import { ID_LIMIT } from '../src/lib/block-hash.js';

const BLOCKS = Number(process.env['PREFIX_BLOCKS'] ?? 1 << 20);
const ROUNDS = Number(process.env['PREFIX_ROUNDS'] ?? 3);
const PROMPT_BLOCKS = 512;
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc (npm run bench:prefix-model does)');

/** Prompts of chained-looking ids: the first half from a pool of 64 shared prefixes, the rest fresh. */
function prompts(n: number): number[][] {
  let next = 1;
  const shared = Array.from({ length: 64 }, () => Array.from({ length: PROMPT_BLOCKS / 2 }, () => (next++ * 2654435761) % ID_LIMIT));
  return Array.from({ length: n }, (_, i) => [...shared[i % 64]!, ...Array.from({ length: PROMPT_BLOCKS / 2 }, () => (next++ * 2654435761) % ID_LIMIT)]);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const heap = () => {
  gc!();
  return process.memoryUsage().heapUsed;
};

function round(kind: 'sized' | 'unbounded'): { bytesPerBlock: number; rssMiB: number; nsPerBlock: number; blocks: number; hitShare: number } {
  // Enough prompts to fill the model twice over: eviction (sized) and sampling (unbounded) both run.
  const ps = prompts(Math.ceil((2 * BLOCKS) / (PROMPT_BLOCKS / 2)));
  const spreads = ps.map((p) => p.map((id) => spreadOf(id)));
  const tokens = new Array<number>(PROMPT_BLOCKS).fill(16);
  const before = heap();
  const sized = kind === 'sized' ? new SizedPrefixCache<number>(BLOCKS) : null;
  const unbounded = kind === 'unbounded' ? new UnboundedPrefixSet<number>(BLOCKS) : null;
  let hit = 0;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < ps.length; i++) {
    if (sized) {
      const r = sized.begin(ps[i]!, PROMPT_BLOCKS - 1, PROMPT_BLOCKS);
      sized.end(r.holding);
      hit += r.hit;
    } else hit += unbounded!.admit(ps[i]!, spreads[i]!, tokens) / 16;
  }
  const ns = Number(process.hrtime.bigint() - t0) / (ps.length * PROMPT_BLOCKS);
  const held = sized ? sized.cachedBlocks : unbounded!.size;
  const bytes = heap() - before;
  const rssMiB = process.memoryUsage().rss / 2 ** 20;
  // Keep the model alive until measured.
  if ((sized?.heldBlocks ?? 0) < 0 || (unbounded?.rate ?? 1) < 0) console.log('');
  return { bytesPerBlock: bytes / held, rssMiB, nsPerBlock: ns, blocks: held, hitShare: hit / (ps.length * PROMPT_BLOCKS) };
}

const rows: Record<string, ReturnType<typeof round>[]> = { sized: [], unbounded: [] };
for (let r = 0; r < ROUNDS; r++) {
  for (const kind of ['sized', 'unbounded'] as const) rows[kind]!.push(round(kind));
}
console.log(`# prefix-cache model at ${BLOCKS.toLocaleString('en')} blocks, ${ROUNDS} rounds, medians (Node ${process.version})`);
console.log('| model | blocks held | heap bytes per block | RSS after (MiB) | ns per block admitted | blocks hit |');
console.log('| --- | ---: | ---: | ---: | ---: | ---: |');
for (const [kind, rs] of Object.entries(rows)) {
  const m = (f: (x: ReturnType<typeof round>) => number) => median(rs.map(f));
  console.log(`| ${kind} | ${m((x) => x.blocks).toLocaleString('en')} | ${m((x) => x.bytesPerBlock).toFixed(0)} | ${m((x) => x.rssMiB).toFixed(0)} | ${m((x) => x.nsPerBlock).toFixed(0)} | ${(m((x) => x.hitShare) * 100).toFixed(1)} % |`);
}
