/**
 * Records that reach the metrics side before the upstream's first model list wait here, so
 * that they are labelled with their model rather than `other` (models.ts waits at most
 * FIRST_LIST_WAIT_MS for that list). Only the records wait: the in-flight gauge moves at once.
 * On close, whatever still waits is recorded, as `other` if need be.
 */
import type { RequestRecord } from '../record/record.js';
import { UntilReady } from '../lib/until-ready.js';

export class StartupBuffer {
  private readonly early = new UntilReady<readonly RequestRecord[]>();

  get waiting(): boolean {
    return this.early.waiting;
  }

  hold(records: readonly RequestRecord[]): void {
    if (records.length > 0) this.early.push(records);
  }

  /** The model list is in (or the wait is over): what waited goes to `ingest`, in order. Once only. */
  release(ingest: (records: readonly RequestRecord[]) => void): void {
    this.early.ready(ingest);
  }
}
