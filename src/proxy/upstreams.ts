/**
 * The upstream set and the router: which inference server a request goes to.
 *
 * - A generation request goes to an upstream whose /v1/models lists its model; among
 *   several (replicas), to the one with the fewest requests in flight from this loop
 *   (ties rotate). An upstream whose connection was refused is skipped until its model list
 *   answers again, as long as another replica is up.
 * - A model nobody lists, and every other path, goes to the first upstream (a path that
 *   names a model, `/v1/models/<id>`, goes by that model).
 * - With one upstream there is nothing to choose: `pick` returns it without reading anything,
 *   and nothing is polled (behaviour, bytes and requests are exactly those of one `--upstream`).
 */
import { Pool, request, type Dispatcher } from 'undici';
import type { Logger } from 'pino';
import type { ConnectionOptions } from 'node:tls';
import type { UpstreamSpec } from '../lib/upstream-spec.js';

/** How often a refused upstream's model list is asked again (it comes back as soon as it answers). */
const DOWN_PROBE_MS = 1_000;
const LIST_TIMEOUT_MS = 5_000;
const MAX_LISTED = 100;

export class Upstream {
  readonly pool: Pool;
  /** Path prefix of the upstream URL ('' for none). */
  readonly basePath: string;
  /** Requests from this loop on this upstream now (dispatched, not yet finished). */
  inFlight = 0;
  /** Models from its /v1/models (the last list that answered). */
  models = new Set<string>();
  /** The raw `data` entries of its last list, for the merged /v1/models. */
  listed: unknown[] = [];
  /** Its connection was refused and no model list has answered since. */
  down = false;

  constructor(
    readonly index: number,
    readonly spec: UpstreamSpec,
    connect: ConnectionOptions | undefined,
  ) {
    const url = new URL(spec.url);
    this.basePath = url.pathname === '/' ? '' : url.pathname;
    this.pool = new Pool(url.origin, {
      connections: spec.connections,
      connectTimeout: spec.connectTimeout * 1000,
      headersTimeout: spec.headersTimeout * 1000,
      bodyTimeout: spec.idleTimeout * 1000,
      keepAliveTimeout: 4_000,
      connect,
    });
  }

  get name(): string {
    return this.spec.name;
  }
}

export interface UpstreamSetOptions {
  specs: readonly UpstreamSpec[];
  /** TLS options per upstream (tls.ts), decided once. */
  connect: (spec: UpstreamSpec) => ConnectionOptions | undefined;
  refreshSeconds: number;
  log: Logger;
}

export class UpstreamSet {
  readonly all: Upstream[];
  readonly first: Upstream;
  private timer: NodeJS.Timeout | null = null;
  private probe: NodeJS.Timeout | null = null;
  private cursor = 0;

  constructor(private readonly opts: UpstreamSetOptions) {
    this.all = opts.specs.map((s, i) => new Upstream(i, s, opts.connect(s)));
    this.first = this.all[0]!;
  }

  get routed(): boolean {
    return this.all.length > 1;
  }

  /** Starts polling every upstream's /v1/models (only when there is a choice to make); resolves after the first round or `withinMs`. */
  start(withinMs = 2_000): Promise<void> {
    if (!this.routed) return Promise.resolve();
    this.timer = setInterval(() => void this.refreshAll(), this.opts.refreshSeconds * 1000);
    this.timer.unref();
    const first = this.refreshAll();
    return new Promise((resolve) => {
      const t = setTimeout(resolve, withinMs);
      t.unref();
      void first.then(() => {
        clearTimeout(t);
        resolve();
      });
    });
  }

  /** The upstream for a request for `model` ('' when the request names none). */
  pick(model: string): Upstream {
    if (!this.routed || model === '') return this.first;
    let best: Upstream | null = null;
    const n = this.all.length;
    const start = this.cursor++ % n;
    for (let k = 0; k < n; k++) {
      const u = this.all[(start + k) % n]!;
      if (!u.models.has(model)) continue;
      if (best === null || better(u, best)) best = u;
    }
    return best ?? this.first;
  }

  /** Another upstream listing `model` that is not `failed` and not down, for a request refused before any byte was sent. */
  alternative(model: string, failed: Upstream): Upstream | null {
    let best: Upstream | null = null;
    for (const u of this.all) {
      if (u === failed || u.down || !u.models.has(model)) continue;
      if (best === null || u.inFlight < best.inFlight) best = u;
    }
    return best;
  }

  /** A connection to `u` was refused: route around it until it answers its model list. */
  markDown(u: Upstream): void {
    if (!this.routed || u.down) return;
    u.down = true;
    this.opts.log.warn({ upstream: u.name }, 'upstream refused the connection; routing its models to the other upstreams until it answers again');
    this.probe ??= setInterval(() => void this.probeDown(), DOWN_PROBE_MS);
    this.probe.unref();
  }

  /** The merged /v1/models answer: every upstream's entries, first upstream first, each id once. */
  mergedModels(): Buffer {
    const seen = new Set<string>();
    const data: unknown[] = [];
    for (const u of this.all) {
      for (const m of u.listed) {
        const id = (m as { id?: unknown }).id;
        if (typeof id !== 'string' || seen.has(id)) continue;
        seen.add(id);
        data.push(m);
      }
    }
    return Buffer.from(JSON.stringify({ object: 'list', data }));
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    if (this.probe) clearInterval(this.probe);
    await Promise.all(this.all.map((u) => u.pool.close()));
  }

  private async probeDown(): Promise<void> {
    const down = this.all.filter((u) => u.down);
    if (down.length === 0 && this.probe) {
      clearInterval(this.probe);
      this.probe = null;
      return;
    }
    await Promise.all(down.map((u) => this.refresh(u)));
  }

  private refreshAll(): Promise<void> {
    return Promise.all(this.all.map((u) => this.refresh(u))).then(() => undefined);
  }

  private async refresh(u: Upstream): Promise<void> {
    try {
      const entries = await fetchModelList(u);
      u.listed = entries.slice(0, MAX_LISTED);
      u.models = new Set(u.listed.map((m) => (m as { id: string }).id));
      if (u.down) this.opts.log.info({ upstream: u.name }, 'upstream answers again; routing to it');
      u.down = false;
    } catch (err) {
      this.opts.log.debug({ upstream: u.name, err: (err as Error).message }, 'cannot read upstream /v1/models');
    }
  }
}

/** A replica that is up beats one that is down; then fewer in flight wins (the first seen wins ties, and the scan start rotates). */
function better(u: Upstream, best: Upstream): boolean {
  if (u.down !== best.down) return !u.down;
  return u.inFlight < best.inFlight;
}

/** The `data` entries of an upstream's /v1/models (the OpenAI shape; llama-server adds a `models` list we do not need here). */
async function fetchModelList(u: Upstream): Promise<unknown[]> {
  const res = await request(`${u.spec.url.replace(/\/+$/, '')}/v1/models`, {
    dispatcher: u.pool as Dispatcher, headersTimeout: LIST_TIMEOUT_MS, bodyTimeout: LIST_TIMEOUT_MS,
  });
  if (res.statusCode !== 200) {
    await res.body.dump();
    throw new Error(`status ${res.statusCode}`);
  }
  const doc = (await res.body.json()) as { data?: unknown };
  if (!Array.isArray(doc.data)) throw new Error('no data list');
  return doc.data.filter((m) => typeof (m as { id?: unknown })?.id === 'string');
}
