/**
 * The upstream set and the router: which inference server a request goes to.
 *
 * - A generation request goes to an upstream whose /v1/models lists its model; among
 *   several (replicas), to the one with the fewest requests in flight from this loop
 *   (ties rotate). An upstream whose connection was refused is skipped until it answers
 *   again, as long as another replica is up.
 * - A model nobody lists, and every other path, goes to the first upstream (a path that
 *   names a model, `/v1/models/<id>`, goes by that model).
 * - With one upstream there is nothing to choose: `pick` returns it without reading anything
 *   (behaviour, bytes and requests are exactly those of one `--upstream`).
 *
 * The lists are not read here: the metrics side's one poller (metrics/models.ts) reads them
 * and each proxy loop is handed them (`update`). What a loop does ask on its own is whether an
 * upstream that refused *its* connection answers again: once a second, only while one is down.
 */
import { Pool, request, type Dispatcher } from 'undici';
import type { Logger } from 'pino';
import type { ConnectionOptions } from 'node:tls';
import type { UpstreamSpec } from '../lib/upstream-spec.js';
import { MAX_LISTED, type ModelLists } from '../record/model-lists.js';

/** How often an upstream that refused a connection is asked whether it answers again. */
const DOWN_PROBE_MS = 1_000;
const PROBE_TIMEOUT_MS = 5_000;

export class Upstream {
  readonly pool: Pool;
  /** Path prefix of the upstream URL ('' for none). */
  readonly basePath: string;
  /** Requests from this loop on this upstream now (dispatched, not yet finished). */
  inFlight = 0;
  /** Models from its /v1/models (the last list that answered). */
  models = new Set<string>();
  /** The raw `data` entries of its last list, for the merged /v1/models. */
  listed: readonly unknown[] = [];
  /** Its connection was refused and it has not answered since. */
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
  log: Logger;
}

export class UpstreamSet {
  readonly all: Upstream[];
  readonly first: Upstream;
  private probe: NodeJS.Timeout | null = null;
  private cursor = 0;
  /** Settles the wait of `start` at the first lists. */
  private listed: (() => void) | null = null;

  constructor(private readonly opts: UpstreamSetOptions) {
    this.all = opts.specs.map((s, i) => new Upstream(i, s, opts.connect(s)));
    this.first = this.all[0]!;
  }

  get routed(): boolean {
    return this.all.length > 1;
  }

  /** Resolves once the first lists are in (`update`), or after `withinMs`; at once when there is no choice to make. */
  start(withinMs = 2_000): Promise<void> {
    if (!this.routed) return Promise.resolve();
    return new Promise((resolve) => {
      const t = setTimeout(resolve, withinMs);
      t.unref();
      this.listed = () => {
        clearTimeout(t);
        resolve();
      };
    });
  }

  /** Each upstream's latest list, from the metrics side's poller; an upstream whose list is null keeps what it had. */
  update(lists: ModelLists): void {
    lists.forEach((entries, i) => {
      const u = this.all[i];
      if (!u || !entries) return;
      u.listed = entries.slice(0, MAX_LISTED);
      u.models = new Set(u.listed.map((m) => (m as { id: string }).id));
    });
    this.listed?.();
    this.listed = null;
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
    await Promise.all(down.map((u) => this.answers(u)));
  }

  /** Asks a down upstream, through this loop's own pool, whether it answers again (its list itself comes from the metrics side). */
  private async answers(u: Upstream): Promise<void> {
    try {
      const res = await request(`${u.spec.url.replace(/\/+$/, '')}/v1/models`, {
        dispatcher: u.pool as Dispatcher, headersTimeout: PROBE_TIMEOUT_MS, bodyTimeout: PROBE_TIMEOUT_MS,
      });
      await res.body.dump();
      if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}`);
      if (u.down) this.opts.log.info({ upstream: u.name }, 'upstream answers again; routing to it');
      u.down = false;
    } catch (err) {
      this.opts.log.debug({ upstream: u.name, err: (err as Error).message }, 'upstream still does not answer');
    }
  }
}

/** A replica that is up beats one that is down; then fewer in flight wins (the first seen wins ties, and the scan start rotates). */
function better(u: Upstream, best: Upstream): boolean {
  if (u.down !== best.down) return !u.down;
  return u.inFlight < best.inFlight;
}
