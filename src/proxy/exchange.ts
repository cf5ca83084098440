/**
 * One proxied request, start to finish: read (or stream) the body, forward it, relay the
 * response chunk by chunk with the timing tap, and hand one record to the metrics side.
 * Every path through here ends in exactly one `finish()`, hence exactly one outcome.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';
import type { Logger } from 'pino';
import { InfermeterError, errorCode, isTimeout, upstreamError } from '../lib/errors.js';
import type { Outcome } from '../record/record.js';
import type { RecordSink, WatchedStream } from '../record/sink.js';
import { readGenerationRequest } from './body.js';
import { hasBody, modelInPath } from './request-shape.js';
import { refuseBody, tooLarge } from './body-limit.js';
import { clientResponseHeaders, headerValue, upstreamRequestHeaders } from './headers.js';
import { RequestMeter } from './meter.js';
import type { RouteInfo } from '../record/routes.js';
import type { TenantReader } from './tenant.js';
import type { InputReader } from './input.js';
import type { RequestInput } from '../record/input.js';
import { SseFramer } from '../lib/sse.js';
import { TracePropagator } from './trace-context.js';
import type { Upstream, UpstreamSet } from './upstreams.js';

export interface ProxyContext {
  /** Where requests go (upstreams.ts): the list of one for a single --upstream. */
  upstreams: UpstreamSet;
  injectUsage: boolean;
  bodyLimit: number;
  sink: RecordSink;
  log: Logger;
  /** null when tracing is off: the client's traceparent then passes through untouched. */
  trace: TracePropagator | null;
  /** The request's tenant (tenant.ts), decided at startup. */
  tenant: TenantReader;
  /** The body and session handed to the prompt readers (input.ts); null when none is on. */
  input: InputReader | null;
}

/** Socket errors on a reused keep-alive connection that closed under us (llama-server does this). */
const RETRYABLE = new Set(['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE']);
/** The upstream took none of the request: another replica may have it (several upstreams only). */
const REFUSED = new Set(['ECONNREFUSED']);

/**
 * The exchange is its own undici dispatch handler: response bytes go from undici's parser
 * straight to the client socket, with no Readable stream, async iterator or AbortSignal
 * between them (each of those costs allocations and ticks per chunk on the proxy loop).
 */
export class Exchange implements Dispatcher.DispatchHandler, WatchedStream {
  private meter: RequestMeter;
  model = '';
  /** The sink was told this request's model (its in-flight count per model). */
  private modelAdmitted = false;
  private streamed = false;
  private status = 0;
  private finished = false;
  private clientGone = false;
  /** undici's handle on the upstream request once it is on a connection. */
  private controller: Dispatcher.DispatchController | null = null;
  /** The upstream answered (headers in): from here a failure can only cut the stream short. */
  private responded = false;
  private headers: Record<string, string | string[]> = {};
  private body: Buffer | IncomingMessage | null = null;
  private replayable = true;
  private attempt = 0;
  private framer: SseFramer | null = null;
  private collectJson = false;
  private awaitingDrain = false;
  /** The upstream this request went to (null until dispatched); it counts the request in flight until finish(). */
  private upstream: Upstream | null = null;
  private failedOver = false;
  /** The request as the metrics side's prompt readers get it (a reference to the buffered body). */
  private input: RequestInput | null = null;
  /** The record's requestBytes and abortPropagation (record/record.ts; -2 while the abort is under way). */
  private requestBytes = 0; private abortPropagation = -1;

  constructor(
    private readonly ctx: ProxyContext,
    private readonly req: IncomingMessage,
    private readonly res: ServerResponse,
    private readonly route: RouteInfo,
    private readonly path: string,
    t0: number,
  ) {
    this.meter = new RequestMeter(t0, false, ctx.sink, route.api ?? 'chat');
    this.meter.inFlightAtStart = ctx.sink.started(route.route);
    if (ctx.trace) {
      ctx.trace.start(req.headers, this.meter);
      this.meter.readsResponse = true;
    }
    res.on('close', this.onClientClose);
  }

  /** The upstream's configured name, for every log line about this request (undefined before one was picked: pino leaves the field out). */
  get upstreamName(): string | undefined {
    return this.upstream?.name;
  }

  async run(): Promise<void> {
    let body: Buffer | IncomingMessage | null = null;
    let injected = false;
    if (this.route.metered && this.req.method === 'POST') {
      const raw = await this.readBody();
      if (!raw) return;
      this.requestBytes = raw.length;
      if (this.ctx.input) this.input = this.ctx.input(this.req.headers, raw);
      // Usage injection is a chat/completions matter: the Messages and Responses APIs always report usage.
      const gen = readGenerationRequest(raw, this.ctx.injectUsage && (this.route.api === 'chat' || this.route.api === 'completions'));
      this.meter.generatesNothing = gen.background && !gen.stream;
      this.model = gen.model;
      this.ctx.sink.admitted(gen.model);
      this.modelAdmitted = true;
      this.streamed = gen.stream;
      if (gen.stream) this.ctx.sink.watch(this);
      injected = gen.injected;
      if (gen.unreadable) this.meter.failure = 'invalid_body';
      body = gen.body;
    } else if (this.route.readsModel && this.req.method === 'POST') {
      body = await this.readBody();
      if (!body) return;
      this.model = readGenerationRequest(body, false).model;
    } else if (hasBody(this.req)) {
      const declared = Number(this.req.headers['content-length'] ?? 0);
      if (declared > this.ctx.bodyLimit) return this.reject(tooLarge(this.ctx.bodyLimit));
      body = this.req;
    }
    if (injected) {
      const first = this.meter;
      this.meter = new RequestMeter(first.t0, true, this.ctx.sink, first.api);
      first.carryTo(this.meter);
    }
    this.headers = upstreamRequestHeaders(this.req.headers, this.req.socket.remoteAddress, Buffer.isBuffer(body) ? body.length : null);
    if (this.ctx.trace) TracePropagator.rewrite(this.headers, this.meter);
    this.body = body;
    this.replayable = Buffer.isBuffer(body) || body === null;
    const upstreams = this.ctx.upstreams;
    if (upstreams.routed && this.route.route === 'models') {
      const model = modelInPath(this.path);
      if (model === null && this.req.method === 'GET') return this.answerMergedModels();
      this.model = model ?? '';
    }
    this.upstream = upstreams.pick(this.model);
    this.upstream.inFlight++;
    this.dispatch();
  }

  /** GET /v1/models with several upstreams: every upstream's list in one, as one engine would answer. */
  private answerMergedModels(): void {
    const body = this.ctx.upstreams.mergedModels();
    this.status = 200;
    this.res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length }).end(body);
    this.finish('ok', performance.now(), null);
  }

  private dispatch(): void {
    const upstream = this.upstream!;
    try {
      upstream.pool.dispatch({ path: upstream.basePath + this.path, method: this.req.method as Dispatcher.HttpMethod, headers: this.headers, body: this.body }, this);
    } catch (err) {
      // undici refuses the request outright (a header value it cannot send, say).
      this.reject(upstreamError(err));
    }
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.clientGone) controller.abort(clientGoneError());
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    if (this.clientGone) return controller.abort(clientGoneError());
    this.responded = true;
    this.status = statusCode;
    const contentType = headerValue(headers['content-type']);
    const encoded = (headerValue(headers['content-encoding']) || 'identity') !== 'identity';
    const sse = this.route.metered && contentType.includes('text/event-stream');
    const json = this.route.metered && !sse && contentType.includes('json');
    if (this.route.metered && encoded) this.meter.failure = 'encoded_body';
    const meter = this.meter;
    this.framer = sse && !encoded ? new SseFramer(meter.stripUsage, meter.onData, meter.onOversized) : null;
    if (sse) this.streamed = true;
    else if (json) this.streamed = false;
    this.collectJson = json && !encoded && statusCode < 400;
    const res = this.res;
    try {
      res.writeHead(statusCode, clientResponseHeaders(headers, this.framer !== null && meter.stripUsage));
    } catch (err) {
      // A header Node will not send (a forbidden character): nothing usable can reach the
      // client, so the exchange ends as a broken stream (the client's connection is cut).
      controller.abort(err as Error);
      return;
    }
    // A stream's headers go out at once, as the upstream sent them; a plain body carries its
    // own. "At once" is the end of this read: an event that came in the same read then goes
    // out with the headers in one write, where flushing now would cost a second syscall.
    if (contentType.includes('event-stream')) process.nextTick(flushHeaders, res);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.clientGone) return;
    const meter = this.meter;
    meter.now = performance.now();
    const framer = this.framer;
    const res = this.res;
    let ok = true;
    if (framer) {
      if (framer.mustFrameFirst(chunk)) {
        // This read may carry the usage chunk we injected: frame it first to drop that event.
        const out = framer.feed(chunk);
        if (out && out.length > 0) ok = res.write(out);
      } else {
        // Forward first, then frame: metering never delays a byte.
        ok = res.write(chunk);
        framer.observe(chunk);
      }
    } else {
      ok = res.write(chunk);
      if (this.collectJson) meter.collectJson(chunk);
    }
    if (!ok && !this.awaitingDrain) {
      this.awaitingDrain = true;
      controller.pause();
      res.once('drain', () => {
        this.awaitingDrain = false;
        controller.resume();
      });
    }
  }

  onResponseEnd(): void {
    if (this.clientGone || this.finished) return;
    const end = performance.now();
    const meter = this.meter;
    const tail = this.framer?.end();
    if (tail && tail.length > 0) this.res.write(tail);
    if (this.collectJson) meter.finishJson();
    this.res.end();
    const statusCode = this.status;
    const outcome: Outcome = statusCode >= 400 ? 'upstream_error' : meter.sawErrorEvent ? 'stream_error' : 'ok';
    this.finish(outcome, end, outcome === 'ok' ? null : statusCode >= 400 ? String(statusCode) : 'stream_error');
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    if (this.finished || this.abortPropagation === -2) return;
    if (this.clientGone) return this.finish('client_abort', -1, null);
    if (!this.responded) {
      if (this.attempt === 0 && this.replayable && RETRYABLE.has(errorCode(err))) {
        this.attempt++;
        this.controller = null;
        this.ctx.log.debug({ code: errorCode(err), route: this.route.route, upstream: this.upstreamName }, 'upstream closed a reused connection; retrying once');
        // Out of undici's error path before starting over.
        process.nextTick(() => (this.clientGone ? this.finish('client_abort', -1, null) : this.dispatch()));
        return;
      }
      if (this.failOver(err)) return;
      return this.reject(upstreamError(err));
    }
    // Headers are out: the only honest signal left is to cut the client's stream short.
    this.ctx.log.warn({ code: errorCode(err), route: this.route.route, upstream: this.upstreamName }, 'upstream stream broke');
    this.res.destroy();
    this.finish(isTimeout(err) ? 'upstream_timeout' : 'stream_error', -1, errorCode(err));
  }

  /**
   * A refused connection sent nothing to that upstream: with several upstreams, it is routed
   * around from now on, and this request goes (once) to another upstream serving its model.
   */
  private failOver(err: Error): boolean {
    const upstreams = this.ctx.upstreams;
    if (!upstreams.routed || this.failedOver || !this.replayable || !REFUSED.has(errorCode(err))) return false;
    const failed = this.upstream!;
    upstreams.markDown(failed);
    const next = upstreams.alternative(this.model, failed);
    if (!next) return false;
    this.failedOver = true;
    failed.inFlight--;
    next.inFlight++;
    this.upstream = next;
    this.controller = null;
    process.nextTick(() => (this.clientGone ? this.finish('client_abort', -1, null) : this.dispatch()));
    return true;
  }

  private readonly onClientClose = (): void => {
    if (this.finished || this.res.writableFinished) return;
    this.clientGone = true;
    // The GPU must stop generating for nobody: abort the upstream request now (none started: nothing
    // reached it). undici reports the abort (onResponseError) before it closes the connection: finish after.
    const controller = this.controller, t = performance.now();
    this.abortPropagation = -2;
    controller?.abort(clientGoneError());
    this.abortPropagation = controller ? (performance.now() - t) / 1000 : -1;
    // A body still being read would otherwise wait forever for bytes that will not come.
    if (!this.req.complete) this.req.destroy();
    this.finish('client_abort', -1, null);
  };

  private readBody(): Promise<Buffer | null> {
    const declared = Number(this.req.headers['content-length'] ?? 0);
    if (declared > this.ctx.bodyLimit) {
      this.reject(tooLarge(this.ctx.bodyLimit));
      return Promise.resolve(null);
    }
    // Plain 'data'/'end' listeners: an async iterator costs a promise and a tick per read.
    return new Promise((resolve) => {
      const req = this.req;
      const parts: Buffer[] = [];
      let size = 0;
      const done = (body: Buffer | null) => {
        req.off('data', onData);
        req.off('end', onEnd);
        req.off('error', onError);
        req.off('close', onError);
        resolve(body);
      };
      const onData = (chunk: Buffer) => {
        size += chunk.length;
        if (size > this.ctx.bodyLimit) {
          this.reject(tooLarge(this.ctx.bodyLimit));
          return done(null);
        }
        parts.push(chunk);
      };
      const onEnd = () => {
        if (this.clientGone) {
          this.finish('client_abort', -1, null);
          return done(null);
        }
        done(parts.length === 1 ? parts[0]! : Buffer.concat(parts, size));
      };
      const onError = () => {
        if (!this.clientGone) this.onClientClose();
        this.finish('client_abort', -1, null);
        done(null);
      };
      req.on('data', onData);
      req.on('end', onEnd);
      req.on('error', onError);
      req.on('close', onError);
    });
  }

  /** Answers the client with a coded error (before any response byte was sent). */
  private reject(err: InfermeterError): void {
    if (!this.res.headersSent && !this.clientGone) {
      const payload = err.body();
      if (err.code === 'BODY_TOO_LARGE') refuseBody(this.req, this.res, payload, this.ctx.bodyLimit);
      else this.res.writeHead(err.status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }).end(payload);
    } else {
      this.res.destroy();
    }
    this.status = err.status;
    if (err.code !== 'BODY_TOO_LARGE' && err.code !== 'BAD_REQUEST') {
      this.ctx.log.warn({ code: err.code, cause: errorCode(err.cause), route: this.route.route, upstream: this.upstreamName }, err.message);
    }
    this.finish(err.outcome, -1, err.code.toLowerCase());
  }

  /** The silent-stream count's reading (record/sink.ts): the last read's time, the request's start before any. */
  lastByteAt(): number {
    const m = this.meter;
    return m.now > m.t0 ? m.now : m.t0;
  }

  private finish(outcome: Outcome, end: number, errorType: string | null): void {
    if (this.finished) return;
    this.finished = true;
    this.res.off('close', this.onClientClose);
    this.ctx.sink.unwatch(this);
    const upstream = this.upstream;
    if (upstream) upstream.inFlight--;
    this.ctx.sink.finished(
      this.meter.toRecord({
        route: this.route.route,
        operation: this.route.operation,
        model: this.model,
        status: this.status,
        streamed: this.streamed,
        outcome,
        end,
        errorType,
        tenant: this.ctx.tenant(this.req.headers),
        modelAdmitted: this.modelAdmitted,
        upstream: upstream ? upstream.index : -1,
        requestBytes: this.requestBytes,
        abortPropagation: this.abortPropagation,
      }),
      this.input,
    );
  }
}

function flushHeaders(res: ServerResponse): void {
  if (!res.headersSent && !res.destroyed) res.flushHeaders();
}

function clientGoneError(): Error {
  return Object.assign(new Error('the client closed the connection'), { code: 'CLIENT_GONE' });
}
