/**
 * Bounds the model label: only models the upstream serves (its /v1/models, refreshed) or a
 * configured allowlist; anything else becomes `other`. A miss triggers a rate-limited
 * refresh so a model loaded after startup gets its own label.
 *
 * This is the daemon's one reader of the upstreams' model lists. With several upstreams the
 * proxy loops route by the same lists: they read none themselves, they are handed each one's
 * entries (`onLists`) whenever they change. One poller, here, because the metrics side is the
 * one place of the machine: with `--workers N` there are N proxy loops and one metrics side,
 * and the metrics side needs the lists anyway (labels, which upstream serves which model for
 * GPU and engine attribution, --ready-requires-upstream). docs/architecture.md, "Model lists".
 */
import { request, type Dispatcher } from 'undici';
import type { Logger } from 'pino';
import { MAX_LISTED, type ModelEntry, type ModelLists } from '../record/model-lists.js';

export const OTHER_MODEL = 'other';
/** Even an upstream listing hundreds of models cannot blow up the label set. */
export const MAX_MODELS = 100;
const MISS_REFRESH_MIN_MS = 5_000;
/** How long records wait at startup for the upstream's first model list (an upstream that is down costs this once). */
export const FIRST_LIST_WAIT_MS = 2_000;
/**
 * How long an upstream's last list that answered keeps labelling its models while the upstream
 * cannot be read (down, refusing, timing out): a per-model alert sees the whole outage under
 * the model's own label, not the start of it under the model and the rest under `other`. Past
 * it, the upstream is taken to serve nothing (README, "Several engines").
 */
export const LIST_KEPT_MS = 15 * 60_000;
/** While the list is unread or empty, it is asked for again this often (not only every --models-refresh). */
export const UNREAD_RETRY_MS = 1_000;
/**
 * `owned_by` of /v1/models entries → the engine kind it reveals (vLLM, SGLang and llama-server
 * write their own name there; Ollama and the OpenAI API write an owner, which says nothing).
 */
const OWNED_BY_ENGINE: Readonly<Record<string, string>> = { vllm: 'vllm', sglang: 'sglang', llamacpp: 'llamacpp', tgi: 'tgi', 'text-generation-inference': 'tgi', tensorrt_llm: 'trtllm', trtllm: 'trtllm' };

type ListState = 'unread' | 'listed' | 'failed' | 'empty';

export class ModelLabels {
  private known = new Set<string>();
  private lastFetch = 0;
  private fetching: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private retry: NodeJS.Timeout | null = null;
  private state: ListState = 'unread';
  private engineNoted = false;
  /** Each upstream's last list read (index as in the config; a failed read keeps the one before, for LIST_KEPT_MS). */
  private lists: string[][] = [];
  /** When each upstream's list last answered (Unix ms). */
  private listedAt: number[] = [];
  /** Model → the names of the upstreams that list it, from `lists`. */
  private served = new Map<string, string[]>();
  /** Each upstream's last `data` entries that answered (the proxy loops route by them); null: none yet. */
  private entries: (ModelEntry[] | null)[] = [];
  /** What was last handed to onLists (JSON), to hand on only a change. */
  private published: string | null = null;

  constructor(
    private readonly opts: {
      allowlist: string[]; upstream: string; refreshSeconds: number; log: Logger;
      /** Carries the upstream's TLS settings (tls.ts); the global one otherwise. */
      dispatcher?: Dispatcher;
      /** The upstream answered /v1/models (any HTTP status): readiness may want to know. */
      answered?: () => void;
      /** The configured --engine: a list revealing another engine is said once. */
      engine?: string;
      /** The first upstream's name (its `upstream` label), for upstreamsOf. */
      name?: string;
      /** The other upstreams: the label set is the union of every upstream's list. */
      others?: { url: string; name?: string; dispatcher?: Dispatcher }[];
      /**
       * Several upstreams: each one's `data` entries, for the proxy loops' routing, after the
       * first read and whenever one changes. With several upstreams the lists are read even
       * under an allowlist (which then only decides the labels).
       */
      onLists?: (lists: ModelLists) => void;
      /** LIST_KEPT_MS unless given (tests). */
      listKeptMs?: number;
      /** Date.now unless given (tests). */
      now?: () => number;
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
    if (allowlist.length > 0) this.known = new Set(allowlist.slice(0, MAX_MODELS));
    // Without an allowlist the old set labels records until the upstream's list replaces it.
    void this.start();
  }

  get fixed(): boolean {
    return this.opts.allowlist.length > 0;
  }

  /** Several upstreams: the proxy loops route by the lists. */
  private get routed(): boolean {
    return (this.opts.others?.length ?? 0) > 0;
  }

  /**
   * Starts reading the upstream's list. Resolves once the first read has settled (either
   * way), or after `firstWithinMs`: records labelled before then would all read `other`.
   */
  start(firstWithinMs = FIRST_LIST_WAIT_MS): Promise<void> {
    if (this.fixed && !this.routed) return Promise.resolve();
    const first = this.refresh();
    this.timer = setInterval(() => void this.refresh(), this.opts.refreshSeconds * 1000);
    this.timer.unref();
    // An allowlist labels at once; the lists are read for routing only.
    if (this.fixed) return Promise.resolve();
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
    if (this.retry) clearTimeout(this.retry);
    this.retry = null;
  }

  label(model: string): string {
    if (this.known.has(model)) return model;
    if (!this.fixed && model !== '' && Date.now() - this.lastFetch > MISS_REFRESH_MIN_MS) void this.refresh();
    return OTHER_MODEL;
  }

  /**
   * The upstreams whose /v1/models lists this model label, by name (the bottleneck verdict reads
   * their engine series and GPUs). Empty: no list names it (`other`, unread), or an allowlist labels.
   */
  upstreamsOf(label: string): readonly string[] {
    // Under --models the labels come from no list (docs/bottleneck.md): the lists read for routing do not tie them to upstreams.
    if (this.fixed) return [];
    return this.served.get(label) ?? [];
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
        // The union of every list still kept, not only of those that answered this time.
        if (ids.length > 0 && !this.fixed) this.known = this.keptModels();
        this.noteState(ids.length > 0 ? 'listed' : 'empty', ids);
      })
      .catch((err: unknown) => this.noteState('failed', [], (err as Error).message))
      .finally(() => {
        this.fetching = null;
      });
    return this.fetching;
  }

  /**
   * Says what the model list means for the labels, once per change: unreadable or empty (every
   * request is `other` until it answers), and readable again. While it is not listed, it is
   * asked for every second, so the first request after the upstream comes up gets its label.
   */
  private noteState(next: ListState, ids: string[], err?: string): void {
    const before = this.state;
    this.state = next;
    if (this.fixed) return; // the allowlist labels; the lists are read only for routing or as a readiness probe
    const fix = 'requests are labelled model="other" until it does (or set --models)';
    if (next === 'failed' && before !== 'failed') {
      this.opts.log.warn({ upstream: this.opts.upstream, err }, `cannot read the upstream's /v1/models; ${fix}`);
    } else if (next === 'empty' && before !== 'empty') {
      this.opts.log.warn({ upstream: this.opts.upstream }, `the upstream's /v1/models lists no model; ${fix}`);
    } else if (next === 'listed' && before !== 'listed') {
      const models = ids.slice(0, 10);
      if (before === 'unread') this.opts.log.info({ upstream: this.opts.upstream, ...this.perUpstream(), models, count: ids.length }, 'upstream models listed');
      else this.opts.log.info({ upstream: this.opts.upstream, models, count: ids.length }, 'the upstream\'s /v1/models answers again; requests get their model labels');
    }
    if (next !== 'listed' && !this.retry && this.timer) {
      this.retry = setTimeout(() => {
        this.retry = null;
        void this.refresh();
      }, Math.min(UNREAD_RETRY_MS, this.opts.refreshSeconds * 1000));
      this.retry.unref();
    }
  }

  /** An engine the list reveals (its `owned_by`) that is not --engine: said once. */
  private noteEngine(ownedBy: readonly unknown[]): void {
    if (this.engineNoted || !this.opts.engine) return;
    const seen = ownedBy.map((o) => (typeof o === 'string' ? OWNED_BY_ENGINE[o.toLowerCase()] : undefined)).find((e) => e !== undefined);
    if (!seen || seen === this.opts.engine) return;
    this.engineNoted = true;
    this.opts.log.warn({ upstream: this.opts.upstream, engine: this.opts.engine, upstreamEngine: seen },
      `the upstream's /v1/models says it is ${seen} (owned_by), but --engine is ${this.opts.engine}: engine metric names, usage injection and labels follow --engine; start with --engine ${seen}`);
  }

  /** Hands the proxy loops each upstream's entries: after the first read, then on a change. */
  private publish(upstreams: number): void {
    if (!this.routed || !this.opts.onLists) return;
    const lists = Array.from({ length: upstreams }, (_, i) => this.entries[i] ?? null);
    const json = JSON.stringify(lists);
    if (json === this.published) return;
    this.published = json;
    this.opts.onLists(lists);
  }

  private async fetchModels(): Promise<string[]> {
    const others = this.opts.others ?? [];
    const lists = await Promise.allSettled([
      this.fetchFrom(this.opts.upstream, this.opts.dispatcher, this.opts.answered),
      ...others.map((o) => this.fetchFrom(o.url, o.dispatcher)),
    ]);
    this.noteServed(lists);
    const ok = lists.filter((l): l is PromiseFulfilledResult<Listed> => l.status === 'fulfilled');
    if (ok.length === 0) {
      // Every list unread: the kept ones still label, until each one's keep time runs out.
      if (!this.fixed) this.known = this.keptModels();
      throw (lists[0] as PromiseRejectedResult).reason;
    }
    return [...new Set(ok.flatMap((l) => l.value.ids))];
  }

  private get names(): string[] {
    return [this.opts.name ?? this.opts.upstream, ...(this.opts.others ?? []).map((o) => o.name ?? o.url)];
  }

  /** Several upstreams: each one's first ten models by name (null: its list is not read yet), for the log. */
  private perUpstream(): { upstreams?: Record<string, string[] | null> } {
    if (!this.routed) return {};
    return { upstreams: Object.fromEntries(this.names.map((n, i) => [n, this.lists[i]?.slice(0, 10) ?? null])) };
  }

  /** The models of every upstream's kept list, at most MAX_MODELS. */
  private keptModels(): Set<string> {
    return new Set([...new Set(this.lists.flat())].slice(0, MAX_MODELS));
  }

  private noteServed(lists: PromiseSettledResult<Listed>[]): void {
    const names = this.names;
    const now = (this.opts.now ?? Date.now)();
    const kept = this.opts.listKeptMs ?? LIST_KEPT_MS;
    lists.forEach((l, i) => {
      if (l.status !== 'fulfilled') {
        // Unread for longer than the keep time: the upstream serves nothing any more.
        if (this.lists[i] && now - (this.listedAt[i] ?? 0) > kept) {
          if (this.lists[i]!.length > 0) this.opts.log.warn({ upstream: names[i], models: this.lists[i]!.slice(0, 10), keptSeconds: kept / 1000 }, `the upstream's /v1/models has not answered for ${kept / 1000} s: its models are no longer labelled as its own`);
          this.lists[i] = [];
          this.entries[i] = [];
        }
        return;
      }
      this.lists[i] = l.value.ids;
      this.listedAt[i] = now;
      if (l.value.entries) this.entries[i] = l.value.entries;
    });
    this.publish(names.length);
    const served = new Map<string, string[]>();
    this.lists.forEach((ids, i) => {
      for (const id of ids) served.set(id, [...(served.get(id) ?? []), names[i]!]);
    });
    this.served = served;
  }

  private async fetchFrom(upstream: string, dispatcher: Dispatcher | undefined, answered?: () => void): Promise<Listed> {
    const res = await request(`${upstream}/v1/models`, { headersTimeout: 5000, bodyTimeout: 5000, dispatcher });
    answered?.();
    if (res.statusCode !== 200) {
      await res.body.dump();
      throw new Error(`status ${res.statusCode}`);
    }
    const doc = (await res.body.json()) as { data?: { id?: unknown; owned_by?: unknown }[]; models?: { name?: unknown; model?: unknown }[] };
    const ids: string[] = [];
    for (const m of doc.data ?? []) if (typeof m.id === 'string') ids.push(m.id);
    this.noteEngine((doc.data ?? []).map((m) => m.owned_by));
    // Ollama's native /api/tags shape, and llama-server's extra "models" list (labels only: routing goes by `data`).
    for (const m of doc.models ?? []) {
      const id = typeof m.model === 'string' ? m.model : m.name;
      if (typeof id === 'string') ids.push(id);
    }
    const entries = Array.isArray(doc.data) ? (doc.data.filter((m) => typeof m?.id === 'string') as ModelEntry[]).slice(0, MAX_LISTED) : null;
    return { ids: [...new Set(ids)], entries };
  }
}

/** One upstream's answer: every model id it names (labels), and its `data` entries (routing; null: no `data` list). */
interface Listed {
  ids: string[];
  entries: ModelEntry[] | null;
}
