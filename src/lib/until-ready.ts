/**
 * Items that arrive before their consumer exists wait here, in order and bounded, and go to
 * it once it is ready; if it never comes, they are dropped. Three readers on the metrics side
 * need exactly this: the OTLP metrics and trace exporters (the OpenTelemetry SDK is imported
 * only when asked for, and takes a moment to load) and the start-up buffer (records wait for
 * the upstream's first model list, so that they get their labels).
 */
export class UntilReady<T> {
  private pending: T[] | null = [];
  private sink: ((item: T) => void) | null = null;

  /** `max`: items kept while waiting; later ones are dropped (a consumer that is slow to come must not grow memory). */
  constructor(private readonly max = Infinity) {}

  /** Still waiting: neither ready nor given up. */
  get waiting(): boolean {
    return this.sink === null && this.pending !== null;
  }

  push(item: T): void {
    if (this.sink) this.sink(item);
    else if (this.pending && this.pending.length < this.max) this.pending.push(item);
  }

  /** The consumer is here: what waited goes to it first, then every item as it comes. Once only; a second call is ignored. */
  ready(sink: (item: T) => void): void {
    if (!this.waiting) return;
    const waited = this.pending!;
    this.pending = null;
    this.sink = sink;
    for (const item of waited) sink(item);
  }

  /** The consumer will never come: what waited, and what comes later, is dropped. */
  giveUp(): void {
    this.pending = null;
  }
}

/**
 * Loads a consumer (a dynamic import and what is built from it), feeding it what arrived in the
 * meantime. Resolves with the consumer, or null when loading failed (then `onError` has been told,
 * and items are dropped from then on).
 */
export function loadThenFeed<T, C>(
  buffer: UntilReady<T>,
  load: () => Promise<C>,
  feed: (consumer: C) => (item: T) => void,
  onError: (err: Error) => void,
): Promise<C | null> {
  return load().then(
    (consumer) => {
      buffer.ready(feed(consumer));
      return consumer;
    },
    (err: Error) => {
      buffer.giveUp();
      onError(err);
      return null;
    },
  );
}
