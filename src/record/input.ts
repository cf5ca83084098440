/**
 * What a request asked, for the readers of prompt shapes on the metrics side (the prompt block
 * hashing, metrics/prompt/): the request body exactly as the proxy had it buffered, and the
 * session header's value. Handed over only while such a reader is on, never encoded into the
 * record (record.ts holds nothing of a prompt), never written or exported: the hashing thread
 * reads it once and drops it.
 *
 * On the wire a batch's inputs are one buffer beside the records (transferred to the metrics
 * thread, or carried over the cluster's IPC channel): the proxy loop copies each body once,
 * when the batch is flushed, and parses nothing.
 */

export interface RequestInput {
  /** The request body as received (before usage injection). */
  body: Uint8Array;
  /** The session header's value, cut to MAX_SESSION_CHARS; null when absent or not asked for. */
  session: string | null;
}

export const MAX_SESSION_CHARS = 256;

/** A batch's inputs: record `at[i]` of the batch has the body bytes[ends[i-1]..ends[i]) and session sessions[i]. */
export interface WireInputs {
  at: number[];
  ends: number[];
  sessions: (string | null)[];
  bytes: ArrayBuffer;
}

/** Collects a batch's inputs on the proxy loop; take() copies them into one buffer. */
export class InputCollector {
  private at: number[] = [];
  private inputs: RequestInput[] = [];
  private size = 0;

  /** The input of the batch's record number `index` (its position in the record encoder). */
  add(index: number, input: RequestInput): void {
    this.at.push(index);
    this.inputs.push(input);
    this.size += input.body.byteLength;
  }

  take(): WireInputs | null {
    if (this.at.length === 0) return null;
    const bytes = new Uint8Array(this.size);
    const ends: number[] = [];
    let pos = 0;
    for (const input of this.inputs) {
      bytes.set(input.body, pos);
      pos += input.body.byteLength;
      ends.push(pos);
    }
    const out: WireInputs = { at: this.at, ends, sessions: this.inputs.map((i) => i.session), bytes: bytes.buffer };
    this.at = [];
    this.inputs = [];
    this.size = 0;
    return out;
  }
}

/** The inputs of a batch of `count` records, by record index (null: none for that record). */
export function decodeInputs(wire: WireInputs | null | undefined, count: number): (RequestInput | null)[] | null {
  if (!wire || wire.at.length === 0) return null;
  const out = new Array<RequestInput | null>(count).fill(null);
  let start = 0;
  wire.at.forEach((index, i) => {
    const end = wire.ends[i]!;
    if (index >= 0 && index < count) out[index] = { body: new Uint8Array(wire.bytes, start, end - start), session: wire.sessions[i] ?? null };
    start = end;
  });
  return out;
}
