/**
 * A Mooncake trace reader written from the format's documentation, not from infermeter's
 * writer or reader (src/bench/replay/trace.ts): the tests feed it the files infermeter writes
 * and reads, so a file that only our own code accepts fails here.
 *
 * The format as its documents give it:
 * - github.com/kvcache-ai/Mooncake README, "Open Source Trace": JSON lines of `timestamp`
 *   (ms), `input_length`, `output_length`, `hash_ids`; blocks of 512 tokens, a trailing
 *   partial block with an id of its own;
 * - AIPerf's docs/benchmark_modes/trace_replay.md: "the trace must be defined in a jsonl
 *   file", the same four keys, `timestamp` "the timing of request arrivals";
 * - AIPerf's `MooncakeTrace` model: extra keys are allowed, `timestamp` an int, each line must
 *   have `input_length` (or a text prompt): a line that is not a request is an error there too;
 *   its prompt generator refuses an input length of 0 ("num_tokens and block_size must both be
 *   greater than 0"), so a line of 0 input tokens is an error here.
 */

export interface MooncakeRow {
  timestamp: number;
  input_length: number;
  output_length: number;
  hash_ids: number[];
}

export const MOONCAKE_BLOCK = 512;

/** Every non-blank line a request; throws `line N: why` on the first that is not. */
export function readMooncake(text: string, blockSize = MOONCAKE_BLOCK): MooncakeRow[] {
  const rows: MooncakeRow[] = [];
  text.split('\n').forEach((raw, i) => {
    if (raw.trim() === '') return;
    const why = (m: string) => new Error(`line ${i + 1}: ${m}: ${raw.slice(0, 120)}`);
    let o: Record<string, unknown>;
    try {
      o = JSON.parse(raw) as Record<string, unknown>;
    } catch {
      throw why('not JSON');
    }
    if (o === null || typeof o !== 'object' || Array.isArray(o)) throw why('not an object');
    const int = (k: string, min: number) => {
      const v = o[k];
      if (typeof v !== 'number' || !Number.isInteger(v) || v < min) throw why(`${k} is not an integer >= ${min}`);
      return v;
    };
    const row: MooncakeRow = { timestamp: int('timestamp', 0), input_length: int('input_length', 1), output_length: int('output_length', 0), hash_ids: [] };
    const ids = o['hash_ids'];
    if (!Array.isArray(ids) || !ids.every((h) => typeof h === 'number' && Number.isSafeInteger(h))) throw why('hash_ids is not a list of integers');
    if (ids.length > Math.ceil(row.input_length / blockSize)) throw why(`more hash_ids than ${blockSize}-token blocks of input_length`);
    row.hash_ids = ids as number[];
    rows.push(row);
  });
  if (rows.length === 0) throw new Error('no rows');
  return rows;
}

/** Leading ids two rows share: the blocks of prompt prefix they have in common. */
export function sharedLeadingIds(a: MooncakeRow, b: MooncakeRow): number {
  let n = 0;
  while (n < a.hash_ids.length && n < b.hash_ids.length && a.hash_ids[n] === b.hash_ids[n]) n++;
  return n;
}
