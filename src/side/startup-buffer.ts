/**
 * Records that reach the metrics side before the upstream's first model list wait here, so
 * that they are labelled with their model rather than `other` (models.ts waits at most
 * FIRST_LIST_WAIT_MS for that list). Only the records wait: the in-flight gauge moves at once.
 * On close, whatever still waits is recorded, as `other` if need be.
 */
import type { RequestRecord } from '../record/record.js';
import type { RequestInput } from '../record/input.js';
import { UntilReady } from '../lib/until-ready.js';

/** A batch's records, and their inputs where the prompt readers get them. */
export interface Decoded {
  records: readonly RequestRecord[];
  inputs: readonly (RequestInput | null)[] | null;
}

export class StartupBuffer {
  private readonly early = new UntilReady<Decoded>();

  get waiting(): boolean {
    return this.early.waiting;
  }

  hold(decoded: Decoded): void {
    if (decoded.records.length > 0) this.early.push(decoded);
  }

  /** The model list is in (or the wait is over): what waited goes to `ingest`, in order. Once only. */
  release(ingest: (decoded: Decoded) => void): void {
    this.early.ready(ingest);
  }
}
