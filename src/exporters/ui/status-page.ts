/**
 * The live status page, served by the metrics listener (never by the proxy loop): `/` and
 * `/ui` (the page), `/ui/*` (its script, styles and uPlot, from this package), and
 * `/api/v1/status` (its one JSON endpoint, docs/status-page.md). Read-only: GET and HEAD.
 *
 * MetricsSide hands it every record batch (ingest) and one router call (handle); it keeps
 * its own 1 s timer, unref'd, to close chart seconds and read the machine snapshot.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { MachineReader } from '../../collectors/snapshot.js';
import type { SloConfig } from '../../slo/config.js';
import type { RecordBatch } from '../../metrics/batch.js';
import { StatusState } from './state.js';
import { ALL_MODELS, buildStatus, type BottleneckProvider, type SlowRequestProvider } from './status-json.js';
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
  /** The model label of a raw model name (ModelLabels.label): the page's models are /metrics' models. */
  labelOf: (model: string) => string;
  now?: () => number;
}

export class StatusPage {
  readonly state: StatusState;
  /** Set by whoever has a slow-request log (issue 16's /debug/requests); null: no table. */
  slowRequests: SlowRequestProvider | null = null;
  /** The metrics side's bottleneck verdicts (src/metrics/bottleneck/); null: none shown. */
  bottlenecks: BottleneckProvider | null = null;
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly opts: StatusPageOptions) {
    this.state = new StatusState({ slos: opts.slos, machine: opts.machine, now: opts.now });
  }

  ingest(batch: RecordBatch): void {
    this.state.ingest(batch.records, batch.inFlight, this.opts.labelOf, batch.inFlightByModel, batch.verdicts);
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

  /** Serves `url` if it is one of the page's paths; false leaves it to the caller. */
  handle(url: string, method: string, res: ServerResponse): boolean {
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    if (path === '/' || path === '/ui') {
      this.send(res, method, 200, 'text/html; charset=utf-8', PAGE(), 'no-cache');
      return true;
    }
    if (path === STATUS_API_PATH) {
      this.api(q < 0 ? '' : url.slice(q + 1), method, res);
      return true;
    }
    const asset = ASSETS[path];
    if (!asset) return false;
    let body: Buffer;
    try {
      body = asset.body();
    } catch (err) {
      this.opts.log.error({ err: (err as Error).message, path }, 'status page: an asset is missing from the package');
      this.send(res, method, 500, 'text/plain', Buffer.from(`status page asset ${path} is missing from this install\n`), 'no-store');
      return true;
    }
    this.send(res, method, 200, asset.type, body, 'max-age=300');
    return true;
  }

  private api(query: string, method: string, res: ServerResponse): void {
    const params = new URLSearchParams(query);
    const sinceRaw = params.get('since') ?? '0';
    const since = Number(sinceRaw);
    if (!/^\d{1,16}$/.test(sinceRaw) || !Number.isSafeInteger(since)) {
      this.sendJson(res, method, 400, { error: 'since: expected Unix milliseconds (a non-negative integer)' });
      return;
    }
    const doc = buildStatus(this.state, { model: params.get('model') ?? ALL_MODELS, since }, this.slowRequests, this.bottlenecks);
    this.sendJson(res, method, 200, doc);
  }

  private sendJson(res: ServerResponse, method: string, status: number, doc: unknown): void {
    this.send(res, method, status, 'application/json; charset=utf-8', Buffer.from(JSON.stringify(doc)), 'no-store');
  }

  private send(res: ServerResponse, method: string, status: number, type: string, body: Buffer, cache: string): void {
    res.writeHead(status, { ...COMMON, 'content-type': type, 'content-length': body.length, 'cache-control': cache, 'content-security-policy': CSP });
    res.end(method === 'HEAD' ? undefined : body);
  }
}
