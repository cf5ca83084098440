/**
 * Bounds the model label: only models the upstream serves (its /v1/models, refreshed) or a
 * configured allowlist; anything else becomes `other`. A miss triggers a rate-limited
 * refresh so a model loaded after startup gets its own label.
 */
import { request, type Dispatcher } from 'undici';
import type { Logger } from 'pino';

export const OTHER_MODEL = 'other';
/** Even an upstream listing hundreds of models cannot blow up the label set. */
export const MAX_MODELS = 100;
const MISS_REFRESH_MIN_MS = 5_000;
/** How long records wait at startup for the upstream's first model list (an upstream that is down costs this once). */
export const FIRST_LIST_WAIT_MS = 2_000;

export class ModelLabels {
  private known = new Set<string>();
  private lastFetch = 0;
  private fetching: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly opts: {
      allowlist: string[]; upstream: string; refreshSeconds: number; log: Logger;
      /** Carries the upstream's TLS settings (tls.ts); the global one otherwise. */
      dispatcher?: Dispatcher;
      /** The upstream answered /v1/models (any HTTP status): readiness may want to know. */
      answered?: () => void;
      /** The other upstreams (issue 26): the label set is the union of every upstream's list. */
      others?: { url: string; dispatcher?: Dispatcher }[];
    },
  ) {
    if (opts.allowlist.length > 0) this.known = new Set(opts.allowlist.slice(0, MAX_MODELS));
  }

  /**
   * A reload: a new allowlist (or none: back to the upstream's list) and refresh interval.
   * Records already counted keep their labels; the next ones get the new set.
   */
  reconfigure(allowlist: string[], refreshSeconds: number): void {
    const same = allowlist.join(',') === this.opts.allowlist.join(',') && refreshSeconds === this.opts.refreshSeconds;
    if (same) return;
    this.stop();
    this.timer = null;
    this.opts.allowlist = allowlist;
    this.opts.refreshSeconds = refreshSeconds;
    if (allowlist.length > 0) {
      this.known = new Set(allowlist.slice(0, MAX_MODELS));
    } else {
      // The old set labels records until the upstream's list replaces it.
      void this.start();
    }
  }

  get fixed(): boolean {
    return this.opts.allowlist.length > 0;
  }

  /**
   * Starts reading the upstream's list. Resolves once the first read has settled (either
   * way), or after `firstWithinMs`: records labelled before then would all read `other`.
   */
  start(firstWithinMs = FIRST_LIST_WAIT_MS): Promise<void> {
    if (this.fixed) return Promise.resolve();
    const first = this.refresh();
    this.timer = setInterval(() => void this.refresh(), this.opts.refreshSeconds * 1000);
    this.timer.unref();
    return new Promise((resolve) => {
      const t = setTimeout(resolve, firstWithinMs);
      t.unref();
      void first.then(() => {
        clearTimeout(t);
        resolve();
      });
    });
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  label(model: string): string {
    if (this.known.has(model)) return model;
    if (!this.fixed && model !== '' && Date.now() - this.lastFetch > MISS_REFRESH_MIN_MS) void this.refresh();
    return OTHER_MODEL;
  }

  /** The current label set, for tests and /metrics consumers. */
  list(): string[] {
    return [...this.known];
  }

  refresh(): Promise<void> {
    if (this.fetching) return this.fetching;
    this.lastFetch = Date.now();
    this.fetching = this.fetchModels()
      .then((ids) => {
        if (ids.length > 0 && !this.fixed) this.known = new Set(ids.slice(0, MAX_MODELS));
      })
      .catch((err: unknown) => this.opts.log.debug({ err: (err as Error).message }, 'cannot read upstream /v1/models'))
      .finally(() => {
        this.fetching = null;
      });
    return this.fetching;
  }

  private async fetchModels(): Promise<string[]> {
    const others = this.opts.others ?? [];
    if (others.length === 0) return this.fetchFrom(this.opts.upstream, this.opts.dispatcher, this.opts.answered);
    const lists = await Promise.allSettled([
      this.fetchFrom(this.opts.upstream, this.opts.dispatcher, this.opts.answered),
      ...others.map((o) => this.fetchFrom(o.url, o.dispatcher)),
    ]);
    const ok = lists.filter((l): l is PromiseFulfilledResult<string[]> => l.status === 'fulfilled');
    if (ok.length === 0) throw (lists[0] as PromiseRejectedResult).reason;
    return [...new Set(ok.flatMap((l) => l.value))];
  }

  private async fetchFrom(upstream: string, dispatcher: Dispatcher | undefined, answered?: () => void): Promise<string[]> {
    const res = await request(`${upstream}/v1/models`, { headersTimeout: 5000, bodyTimeout: 5000, dispatcher });
    answered?.();
    if (res.statusCode !== 200) {
      await res.body.dump();
      throw new Error(`status ${res.statusCode}`);
    }
    const doc = (await res.body.json()) as { data?: { id?: unknown }[]; models?: { name?: unknown; model?: unknown }[] };
    const ids: string[] = [];
    for (const m of doc.data ?? []) if (typeof m.id === 'string') ids.push(m.id);
    // Ollama's native /api/tags shape, and llama-server's extra "models" list.
    for (const m of doc.models ?? []) {
      const id = typeof m.model === 'string' ? m.model : m.name;
      if (typeof id === 'string') ids.push(id);
    }
    return [...new Set(ids)];
  }
}
