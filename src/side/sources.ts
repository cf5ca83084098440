/**
 * The metrics side's bookkeeping per source (a proxy loop: the one of a single process, or a
 * `--workers` cluster worker): its requests in flight and their history, the requests it
 * started and finished per route, its generation requests in flight per raw model name. Every
 * source's counts add up to the machine's; a source that dies has its unfinished requests
 * counted once, as `worker_lost`.
 */
import type { Logger } from 'pino';
import { UNMEASURED, type RequestRecord, type WireBatch } from '../record/record.js';
import { decodeRecords } from '../record/codec.js';
import { decodeInputs } from '../record/input.js';
import { ROUTE_LABELS, routeByLabel, routeLabelIndex } from '../record/routes.js';
import { InFlightHistory } from '../metrics/in-flight-history.js';
import type { ProxyHealth } from './health.js';
import type { Decoded } from './startup-buffer.js';

interface Source {
  inFlight: number;
  started: number[];
  finished: number[];
  history: InFlightHistory;
  /** In flight per raw model name (bounded by the requests in flight: a model leaves when its last request ends). */
  models: Map<string, number>;
  /** Its silent streams per raw model name, as its last batch said. */
  silent: [string, number][];
  /** Its requests in flight per upstream index, as its last batch said. */
  upstreams: number[];
}

export class Sources {
  private readonly sources = new Map<number, Source>();

  constructor(
    private readonly health: ProxyHealth,
    private readonly log: Logger,
  ) {}

  /** One proxy loop's batch: its decoded records (their in-flight figures made machine-wide) and inputs. */
  wire(batch: WireBatch): Decoded {
    let src = this.sources.get(batch.source);
    if (!src) this.sources.set(batch.source, (src = { inFlight: 0, started: [], finished: new Array<number>(ROUTE_LABELS.length).fill(0), history: new InFlightHistory(), models: new Map(), silent: [], upstreams: [] }));
    this.health.beat(batch.source);
    src.inFlight = batch.inFlight;
    src.history.note(Date.now(), batch.generationInFlight ?? 0);
    src.started = batch.startedByRoute;
    src.silent = batch.silentByModel ?? [];
    src.upstreams = batch.upstreamsInFlight ?? [];
    let records: RequestRecord[] = [];
    if (batch.records) {
      try {
        records = decodeRecords(batch.records);
      } catch (err) {
        this.log.error({ err: (err as Error).message, source: batch.source }, 'dropped an unreadable record batch');
      }
    }
    // A batch's starts come before its finishes: a request is admitted in the batch it finishes in, or earlier.
    for (const [model, n] of batch.startedByModel ?? []) src.models.set(model, (src.models.get(model) ?? 0) + n);
    for (const r of records) {
      src.finished[routeLabelIndex(r.route)]!++;
      if (r.outcome === 'ok' || r.outcome === 'stream_error') this.health.upstreamAnswered();
      if (r.modelAdmitted) {
        const left = (src.models.get(r.model) ?? 0) - 1;
        if (left > 0) src.models.set(r.model, left);
        else src.models.delete(r.model);
      }
    }
    if (this.sources.size > 1) this.addOtherLoops(src, records);
    return { records, inputs: decodeInputs(batch.inputs, records.length) };
  }

  /**
   * The machine's count at a record's first token: its own loop's then, plus every other loop's
   * as that loop had last reported it by then (a loop reports within 20 ms of a change, so that
   * part is up to one batch interval and the IPC hop stale). Records without a TTFT (failed
   * streams) take the other loops' latest counts.
   */
  private addOtherLoops(own: Source, records: RequestRecord[]): void {
    for (const r of records) {
      // At its start, likewise (the slow-request log's figure); generation routes only, as the history.
      if (routeByLabel(r.route).metered) for (const s of this.sources.values()) if (s !== own) r.inFlightAtStart += s.history.at(r.startedAt);
      if (r.inFlightAtFirstToken < 0) continue;
      const at = r.ttft >= 0 ? r.startedAt + r.ttft * 1000 : -1;
      for (const s of this.sources.values()) if (s !== own) r.inFlightAtFirstToken += at < 0 ? s.history.latest : s.history.at(at);
    }
  }

  /**
   * A proxy worker died. Each request it had reported starting and not finishing becomes one
   * `worker_lost` record (its model is unknown here: the label is `other`).
   */
  exited(source: number): RequestRecord[] {
    const src = this.sources.get(source);
    this.sources.delete(source);
    if (!src) return [];
    const lost: RequestRecord[] = [];
    src.started.forEach((n, i) => {
      const info = routeByLabel(ROUTE_LABELS[i]!);
      for (let k = src.finished[i]!; k < n; k++) {
        lost.push({ ...UNMEASURED, route: info.route, operation: info.operation, model: '', outcome: 'worker_lost', status: 0, streamed: false, errorType: 'worker_lost', startedAt: Date.now() });
      }
    });
    if (lost.length > 0) this.log.warn({ source, requests: lost.length }, 'counted the requests a dead proxy worker had in flight as worker_lost');
    return lost;
  }

  /** Generation requests in flight per model label, over every loop (labels as they are now). */
  inFlightByModel(labelOf: (model: string) => string): Map<string, number> {
    return this.byLabel(labelOf, (s) => s.models);
  }

  /** Streams silent for --stall-after per model label, over every loop, as each last reported. */
  silentByModel(labelOf: (model: string) => string): Map<string, number> {
    return this.byLabel(labelOf, (s) => s.silent);
  }

  /** One per-raw-model count of every loop, summed per model label. */
  private byLabel(labelOf: (model: string) => string, counts: (s: Source) => Iterable<[string, number]>): Map<string, number> {
    const out = new Map<string, number>();
    for (const s of this.sources.values()) {
      for (const [model, n] of counts(s)) {
        const label = labelOf(model);
        out.set(label, (out.get(label) ?? 0) + n);
      }
    }
    return out;
  }

  /** Requests in flight per upstream index, over every loop, as each last reported. */
  inFlightByUpstream(): number[] {
    const out: number[] = [];
    for (const s of this.sources.values()) s.upstreams.forEach((n, i) => (out[i] = (out[i] ?? 0) + n));
    return out;
  }

  inFlight(): number {
    let n = 0;
    for (const s of this.sources.values()) n += s.inFlight;
    return n;
  }
}
