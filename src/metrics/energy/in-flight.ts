/**
 * When the oldest request still in flight started: the ledger (ledger.ts) may split a second
 * only once every request in flight during it has ended and been handed in, and the judged
 * batch tells counts (requests in flight per model), not which request is which. Each batch's
 * count and finished records are consistent (the proxy sends both in one batch, record/sink.ts),
 * so the requests that started since the last batch are the count's growth plus the ones that
 * finished; each gets the batch's arrival as its start, a little after its real one. A finished
 * request takes away the entry nearest after its own start (its own, or one as young), so the
 * oldest entry is never later than the oldest real start by more than a batch's delay.
 */
export class InFlightStarts {
  /** Estimated start (Unix ms) of each request in flight, ascending. */
  private readonly starts: number[] = [];

  /** One batch at `now`: the machine's requests in flight after it, and the starts of those it finished. */
  note(now: number, inFlight: number, finishedStarts: readonly number[]): void {
    const started = inFlight - this.starts.length + finishedStarts.length;
    for (let i = 0; i < started; i++) this.starts.push(now);
    for (const s of finishedStarts) {
      if (this.starts.length === 0) break;
      const k = this.starts.findIndex((x) => x >= s);
      this.starts.splice(k >= 0 ? k : this.starts.length - 1, 1);
    }
    // A count below what is kept (a worker lost, a record unreadable): the youngest go first.
    if (this.starts.length > inFlight) this.starts.length = Math.max(0, inFlight);
  }

  /** The oldest start among the requests in flight; null: none. */
  get oldest(): number | null {
    return this.starts.length > 0 ? this.starts[0]! : null;
  }
}
