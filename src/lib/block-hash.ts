/**
 * Prompt block hashing: what a prompt's shape is, never what it says. The prompt is cut into
 * blocks (of tokens when infermeter tokenizes as the engine does, else of characters), and
 * every block boundary gets the id of the whole prefix that ends there: SHA-256 over the salt
 * and the prefix, truncated to 53 bits (a JSON-safe integer). So two prompts share their
 * first k ids exactly when they share their first k blocks, as Mooncake's `hash_ids` and
 * vLLM's chained prefix-cache block hashes do, and without the salt (the daemon's kept
 * secret) no guess of a short prompt can be checked against an id.
 *
 * One pass serves every block size that is a multiple of the unit it was cut at: an id names
 * a prefix, not a block size, so the 512-token ids of the workload trace are the 16-token
 * chain's every 32nd element (blockIds), and the engine's own block size reads the same chain
 * (fullBlockIds). docs/workload-trace.md, "Block ids", is the contract.
 */
import { createHash, type Hash } from 'node:crypto';

/** How the prompt was cut: from the tokenizer's ids, or from its characters (then scaled by charsPerToken). */
export type Cut = 'tokens' | 'chars';

/** One prompt's chain of prefix ids. Plain data: it crosses threads by structured clone. */
export interface PromptBlocks {
  cut: Cut;
  /** Tokens per chain element (the unit it was cut at). */
  unit: number;
  /** chain[j]: the id of the prefix of (j + 1) × unit tokens; one per full unit block. */
  chain: number[];
  /** The id of the whole prompt (chain's last when the prompt ends on a unit boundary). */
  whole: number;
  /** Prompt tokens hashed: counted by the tokenizer, or characters / charsPerToken rounded up. */
  tokens: number;
}

/** Largest id + 1: ids are integers in [0, 2^53). */
export const ID_LIMIT = 2 ** 53;
const VERSION = 'infermeter-prefix-v1';

/** The first 53 bits of a digest, as an unsigned big-endian integer. */
function id53(digest: Buffer): number {
  return digest.readUInt32BE(0) * 0x200000 + (digest.readUInt32BE(4) >>> 11);
}

/** Hashes prompts with one salt. Cheap to keep; one per thread that hashes. */
export class PrefixHasher {
  private readonly seeded: Record<Cut, Hash>;

  constructor(salt: string) {
    if (salt === '') throw new Error('PrefixHasher: the salt is empty');
    const seed = (cut: Cut) => createHash('sha256').update(`${VERSION}\0${cut}\0`).update(salt).update('\0');
    this.seeded = { tokens: seed('tokens'), chars: seed('chars') };
  }

  /** The chain of token ids cut every `unit` tokens. */
  tokens(ids: ArrayLike<number>, unit: number): PromptBlocks {
    checkUnit(unit);
    const h = this.seeded.tokens.copy();
    const bytes = Buffer.allocUnsafe(unit * 4);
    const chain: number[] = [];
    const full = Math.floor(ids.length / unit);
    for (let j = 0; j < full; j++) {
      for (let i = 0; i < unit; i++) bytes.writeUInt32LE(ids[j * unit + i]! >>> 0, i * 4);
      h.update(bytes);
      chain.push(id53(h.copy().digest()));
    }
    const rest = ids.length - full * unit;
    for (let i = 0; i < rest; i++) bytes.writeUInt32LE(ids[full * unit + i]! >>> 0, i * 4);
    return { cut: 'tokens', unit, chain, whole: finish(h, chain, rest > 0 ? bytes.subarray(0, rest * 4) : null), tokens: ids.length };
  }

  /**
   * The chain of a text cut every `unit × charsPerToken` characters (UTF-16 code units): the
   * token boundaries are estimated, the same way for every prompt, so shared text still gives
   * shared ids.
   */
  chars(text: string, unit: number, charsPerToken: number): PromptBlocks {
    checkUnit(unit);
    const step = unitChars(unit, charsPerToken);
    const h = this.seeded.chars.copy();
    const chain: number[] = [];
    let at = 0;
    for (; at + step <= text.length; at += step) {
      h.update(text.slice(at, at + step), 'utf8');
      chain.push(id53(h.copy().digest()));
    }
    const tail = at < text.length ? Buffer.from(text.slice(at), 'utf8') : null;
    return { cut: 'chars', unit, chain, whole: finish(h, chain, tail), tokens: Math.ceil(text.length / charsPerToken) };
  }
}

function finish(h: Hash, chain: number[], tail: Buffer | null): number {
  if (tail) return id53(h.update(tail).digest());
  return chain.length > 0 ? chain[chain.length - 1]! : id53(h.digest());
}

function checkUnit(unit: number): void {
  if (!Number.isInteger(unit) || unit < 1) throw new Error(`block unit must be a positive integer of tokens, got ${unit}`);
}

/** Characters per chain element in the chars cut (at least 1). */
export function unitChars(unit: number, charsPerToken: number): number {
  return Math.max(1, Math.round(unit * charsPerToken));
}

/** The unit one chain must be cut at to serve every one of these block sizes: their greatest common divisor. */
export function commonUnit(sizes: readonly number[]): number {
  const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));
  const u = sizes.reduce((a, b) => gcd(a, b), 0);
  if (!(u >= 1)) throw new Error('commonUnit: no block size');
  return u;
}

/**
 * The ids of the full blocks of `size` tokens only (what a prefix cache holds: vLLM caches
 * full blocks). `size` must be a multiple of blocks.unit.
 */
export function fullBlockIds(blocks: PromptBlocks, size: number): number[] {
  const per = stride(blocks, size);
  const out: number[] = [];
  for (let j = per - 1; j < blocks.chain.length; j += per) out.push(blocks.chain[j]!);
  return out;
}

/**
 * Mooncake's `hash_ids` for a prompt of `inputLength` tokens (the engine's usage where it gave
 * one): exactly ceil(inputLength / size) ids, the last one covering the partial block, as
 * AIPerf's mooncake_trace loader requires. The ids are those of the prompt as infermeter cut
 * it: the full blocks' ids, then the whole prompt's when it ends inside a block. Where the
 * engine counted more blocks than that, the missing ones get ids derived from the whole
 * prompt's (unique to it); where fewer, the list is cut short.
 */
export function blockIds(blocks: PromptBlocks, size: number, inputLength: number = blocks.tokens): number[] {
  const count = Math.ceil(Math.max(0, inputLength) / size);
  const ids = fullBlockIds(blocks, size);
  // The whole prompt's id ends a partial block unless the prompt ends on a block boundary.
  if (blocks.tokens > 0 && blocks.whole !== ids[ids.length - 1]) ids.push(blocks.whole);
  if (ids.length >= count) return ids.slice(0, count);
  for (let k = ids.length; k < count; k++) ids.push(paddingId(blocks.whole, k));
  return ids;
}

/** The id of block k past the end of what infermeter hashed: a hash of the whole prompt's id and k. */
function paddingId(whole: number, k: number): number {
  const b = Buffer.alloc(16);
  b.writeDoubleLE(whole, 0);
  b.writeUInt32LE(k, 8);
  return id53(createHash('sha256').update(`${VERSION}\0pad\0`).update(b).digest());
}

function stride(blocks: PromptBlocks, size: number): number {
  if (!Number.isInteger(size) || size < blocks.unit || size % blocks.unit !== 0) {
    throw new Error(`block size ${size} is not a multiple of the unit ${blocks.unit} the prompt was cut at`);
  }
  return size / blocks.unit;
}
