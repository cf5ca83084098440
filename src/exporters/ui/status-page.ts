/**
 * The live status page, served by the metrics listener (never by the proxy loop): `/` and
 * `/ui` (the page), `/ui/*` (its script, styles and uPlot, from this package), and
 * `/api/v1/status` (its one JSON endpoint, docs/status-page.md). Read-only: GET and HEAD.
 *
 * A consumer of judged batches (side/consumers.ts): the metrics side hands it every batch and
 * every reload's SLOs, and registers its routes on the metrics listener; it keeps its own 1 s
 * timer, unref'd, to close chart seconds and read the machine snapshot (collectors/snapshot.ts).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { FastifyReply } from 'fastify';
import type { Logger } from 'pino';
import type { MachineReader } from '../../collectors/snapshot.js';
import type { SloConfig } from '../../slo/config.js';
import type { JudgedBatch } from '../../metrics/batch.js';
import type { BatchConsumer, Routes } from '../../metrics/consumer.js';
import type { LiveSettings } from '../../metrics/live.js';
import { StatusState } from './state.js';
import { ALL_MODELS, buildStatus, type BottleneckProvider, type CapacityProvider, type SlowRequestProvider } from './status-json.js';
import type { EnergyProvider } from './energy-json.js';
import type { PrefixProvider } from './status-json.js';
import type { WasteProvider } from './waste-json.js';
import { PAGE_CSS, PAGE_HTML } from './assets/page.js';
import { APP_JS } from './assets/app-js.js';

export const STATUS_API_PATH = '/api/v1/status';

/** Only our own origin, for everything: the page can load nothing from another host. */
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
const COMMON = { 'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer' };

interface Asset {
  type: string;
  body: () => Buffer;
}

const require = createRequire(import.meta.url);

/** uPlot's files from node_modules, read on first use (a package install and the Docker image both have them). */
function uplotFile(name: string): () => Buffer {
  let cached: Buffer | null = null;
  return () => (cached ??= readFileSync(require.resolve(`uplot/dist/${name}`)));
}

const text = (s: string) => {
  const b = Buffer.from(s);
  return () => b;
};

const ASSETS: Record<string, Asset> = {
  '/ui/app.js': { type: 'text/javascript; charset=utf-8', body: text(APP_JS) },
  '/ui/app.css': { type: 'text/css; charset=utf-8', body: text(PAGE_CSS) },
  '/ui/uplot.js': { type: 'text/javascript; charset=utf-8', body: uplotFile('uPlot.iife.min.js') },
  '/ui/uplot.css': { type: 'text/css; charset=utf-8', body: uplotFile('uPlot.min.css') },
};
const PAGE = text(PAGE_HTML);

export interface StatusPageOptions {
  /** What the collectors last read (CollectorRunner.machine). */
  machine: MachineReader;
  slos: SloConfig;
  log: Logger;
  now?: () => number;
}

export class StatusPage implements BatchConsumer {
  readonly name = 'ui';
  readonly state: StatusState;
  /** Set by whoever has a slow-request log (the trail's, also at /debug/requests); null: no table. */
  slowRequests: SlowRequestProvider | null = null;
  /** The metrics side's bottleneck verdicts (src/metrics/bottleneck/); null: none shown. */
  bottlenecks: BottleneckProvider | null = null;
  /** The metrics side's capacity estimates (src/metrics/headroom/); null: none shown. */
  capacities: CapacityProvider | null = null;
  /** The metrics side's energy and cost per model (src/metrics/energy/); null: none shown. */
  energy: EnergyProvider | null = null;
  /** The metrics side's prefix-cache model (src/metrics/prefix/); null: none shown. */
  prefix: PrefixProvider | null = null;
  /** The metrics side's waste ledger (src/metrics/waste/); null: none shown. */
  waste: WasteProvider | null = null;
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly opts: StatusPageOptions) {
    this.state = new StatusState({ slos: opts.slos, machine: opts.machine, now: opts.now });
  }

  ingest(batch: JudgedBatch): void {
    this.state.ingest(batch);
  }

  applyLive(live: LiveSettings): void {
    this.state.slos = live.slos;
  }

  start(): void {
    // Logged once per failure streak, not once a second.
    let failing = false;
    const tick = () => void this.state.tick().then(
      () => (failing = false),
      (err: Error) => {
        if (!failing) this.opts.log.warn({ err: err.message }, 'status page: reading the collectors failed; will keep trying');
        failing = true;
      },
    );
    this.timer = setInterval(tick, 1000);
    this.timer.unref();
    tick();
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** `/` and `/ui` (the page), its assets, and `/api/v1/status`: GET, and HEAD through Fastify. */
  readonly routes: Routes = (app) => {
    for (const path of ['/', '/ui']) app.get(path, (_req, reply) => this.send(reply, 200, 'text/html; charset=utf-8', PAGE(), 'no-cache'));
    app.get(STATUS_API_PATH, (req, reply) => {
      const q = req.url.indexOf('?');
      return this.api(q < 0 ? '' : req.url.slice(q + 1), reply);
    });
    for (const [path, asset] of Object.entries(ASSETS)) app.get(path, (_req, reply) => this.asset(path, asset, reply));
  };

  private asset(path: string, asset: Asset, reply: FastifyReply): FastifyReply {
    let body: Buffer;
    try {
      body = asset.body();
    } catch (err) {
      this.opts.log.error({ err: (err as Error).message, path }, 'status page: an asset is missing from the package');
      return this.send(reply, 500, 'text/plain', Buffer.from(`status page asset ${path} is missing from this install\n`), 'no-store');
    }
    return this.send(reply, 200, asset.type, body, 'max-age=300');
  }

  private api(query: string, reply: FastifyReply): FastifyReply {
    const params = new URLSearchParams(query);
    const sinceRaw = params.get('since') ?? '0';
    const since = Number(sinceRaw);
    if (!/^\d{1,16}$/.test(sinceRaw) || !Number.isSafeInteger(since)) {
      return this.sendJson(reply, 400, { error: 'since: expected Unix milliseconds (a non-negative integer)' });
    }
    const doc = buildStatus(this.state, { model: params.get('model') ?? ALL_MODELS, since }, this.slowRequests, this.bottlenecks, this.capacities, this.energy, this.prefix, this.waste);
    return this.sendJson(reply, 200, doc);
  }

  private sendJson(reply: FastifyReply, status: number, doc: unknown): FastifyReply {
    return this.send(reply, status, 'application/json; charset=utf-8', Buffer.from(JSON.stringify(doc)), 'no-store');
  }

  private send(reply: FastifyReply, status: number, type: string, body: Buffer, cache: string): FastifyReply {
    return reply.code(status).headers({ ...COMMON, 'content-type': type, 'content-length': body.length, 'cache-control': cache, 'content-security-policy': CSP }).send(body);
  }
}
