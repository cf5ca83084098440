/**
 * One proxied request, start to finish: read (or stream) the body, forward it, relay the
 * response chunk by chunk with the timing tap, and hand one record to the metrics side.
 * Every path through here ends in exactly one `finish()`, hence exactly one outcome.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Dispatcher, Pool } from 'undici';
import type { Logger } from 'pino';
import { InfermeterError, errorCode, isTimeout, upstreamError } from '../errors.js';
import type { Outcome } from '../metrics/record.js';
import type { RecordSink } from '../metrics/sink.js';
import { readGenerationRequest } from './body.js';
import { clientResponseHeaders, headerValue, upstreamRequestHeaders } from './headers.js';
import { RequestMeter } from './meter.js';
import type { RouteInfo } from './routes.js';
import { SseFramer } from './sse.js';

export interface ProxyContext {
  pool: Pool;
  /** Path prefix of the configured upstream URL ('' for none). */
  basePath: string;
  injectUsage: boolean;
  bodyLimit: number;
  sink: RecordSink;
  log: Logger;
}

/** Socket errors on a reused keep-alive connection that closed under us (llama-server does this). */
const RETRYABLE = new Set(['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE']);

export class Exchange {
  private readonly abort = new AbortController();
  private meter: RequestMeter;
  private model = '';
  private streamed = false;
  private status = 0;
  private finished = false;
  private clientGone = false;
  private upstreamBody: Dispatcher.ResponseData['body'] | null = null;

  constructor(
    private readonly ctx: ProxyContext,
    private readonly req: IncomingMessage,
    private readonly res: ServerResponse,
    private readonly route: RouteInfo,
    private readonly path: string,
    t0: number,
  ) {
    this.meter = new RequestMeter(t0, false);
    ctx.sink.started();
    res.on('close', this.onClientClose);
  }

  async run(): Promise<void> {
    let body: Buffer | IncomingMessage | null = null;
    let injected = false;
    if (this.route.metered && this.req.method === 'POST') {
      const raw = await this.readBody();
      if (!raw) return;
      const gen = readGenerationRequest(raw, this.ctx.injectUsage);
      this.model = gen.model;
      this.streamed = gen.stream;
      injected = gen.injected;
      if (gen.unreadable) this.meter.failure = 'invalid_body';
      body = gen.body;
    } else if (hasBody(this.req)) {
      const declared = Number(this.req.headers['content-length'] ?? 0);
      if (declared > this.ctx.bodyLimit) return this.reject(new InfermeterError('BODY_TOO_LARGE'));
      body = this.req;
    }
    if (injected) this.meter = new RequestMeter(this.meter.t0, true);
    const headers = upstreamRequestHeaders(this.req.headers, this.req.socket.remoteAddress, Buffer.isBuffer(body) ? body.length : null);
    await this.forward(headers, body, Buffer.isBuffer(body) || body === null);
  }

  private async forward(headers: Record<string, string | string[]>, body: Buffer | IncomingMessage | null, replayable: boolean): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        const response = await this.ctx.pool.request({
          path: this.ctx.basePath + this.path,
          method: this.req.method as Dispatcher.HttpMethod,
          headers,
          body,
          signal: this.abort.signal,
        });
        return this.relay(response);
      } catch (err) {
        if (this.clientGone) return this.finish('client_abort', -1, null);
        if (attempt === 0 && replayable && RETRYABLE.has(errorCode(err))) {
          this.ctx.log.debug({ code: errorCode(err) }, 'upstream closed a reused connection; retrying once');
          continue;
        }
        return this.reject(upstreamError(err));
      }
    }
  }

  private relay(response: Dispatcher.ResponseData): void {
    const { statusCode, headers, body } = response;
    this.status = statusCode;
    this.upstreamBody = body;
    if (this.clientGone) {
      body.destroy();
      return this.finish('client_abort', -1, null);
    }
    const contentType = headerValue(headers['content-type']);
    const encoded = (headerValue(headers['content-encoding']) || 'identity') !== 'identity';
    const sse = this.route.metered && contentType.includes('text/event-stream');
    const json = this.route.metered && !sse && contentType.includes('json');
    if (this.route.metered && encoded) this.meter.failure = 'encoded_body';
    const meter = this.meter;
    const framer = sse && !encoded ? new SseFramer(meter.stripUsage, meter.onData, meter.onOversized) : null;
    if (sse) this.streamed = true;
    else if (json) this.streamed = false;
    const collectJson = json && !encoded && statusCode < 400;
    const res = this.res;
    res.writeHead(statusCode, clientResponseHeaders(headers, framer !== null && meter.stripUsage));
    // A stream's headers go out now, as the upstream sent them; a plain body carries its own.
    if (contentType.includes('event-stream')) res.flushHeaders();

    const onData = (chunk: Buffer) => {
      meter.now = performance.now();
      let out: Buffer | null = chunk;
      if (framer) {
        if (meter.stripUsage) out = framer.feed(chunk);
        else {
          // Forward first, then frame: metering never delays a byte.
          if (!res.write(chunk)) pause();
          framer.feed(chunk);
          return;
        }
      } else if (collectJson) meter.collectJson(chunk);
      if (out && out.length > 0 && !res.write(out)) pause();
    };
    const pause = () => {
      body.pause();
      res.once('drain', () => body.resume());
    };
    body.on('data', onData);
    body.once('end', () => {
      const end = performance.now();
      const tail = framer?.end();
      if (tail && tail.length > 0) res.write(tail);
      if (collectJson) meter.finishJson();
      res.end();
      const outcome: Outcome = statusCode >= 400 ? 'upstream_error' : meter.sawErrorEvent ? 'stream_error' : 'ok';
      this.finish(outcome, end, outcome === 'ok' ? null : statusCode >= 400 ? String(statusCode) : 'stream_error');
    });
    body.once('error', (err: Error) => {
      if (this.clientGone) return this.finish('client_abort', -1, null);
      // Headers are out: the only honest signal left is to cut the client's stream short.
      this.ctx.log.warn({ code: errorCode(err), route: this.route.route }, 'upstream stream broke');
      res.destroy();
      this.finish(isTimeout(err) ? 'upstream_timeout' : 'stream_error', -1, errorCode(err));
    });
  }

  private readonly onClientClose = (): void => {
    if (this.finished || this.res.writableFinished) return;
    this.clientGone = true;
    // The GPU must stop generating for nobody: abort the upstream request now.
    this.abort.abort();
    this.upstreamBody?.destroy();
    // A body still being read would otherwise wait forever for bytes that will not come.
    if (!this.req.complete) this.req.destroy();
    this.finish('client_abort', -1, null);
  };

  private async readBody(): Promise<Buffer | null> {
    const declared = Number(this.req.headers['content-length'] ?? 0);
    if (declared > this.ctx.bodyLimit) {
      this.reject(new InfermeterError('BODY_TOO_LARGE'));
      return null;
    }
    const parts: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of this.req as AsyncIterable<Buffer>) {
        size += chunk.length;
        if (size > this.ctx.bodyLimit) {
          this.reject(new InfermeterError('BODY_TOO_LARGE'));
          return null;
        }
        parts.push(chunk);
      }
    } catch {
      if (!this.clientGone) this.onClientClose();
      this.finish('client_abort', -1, null);
      return null;
    }
    if (this.clientGone) {
      this.finish('client_abort', -1, null);
      return null;
    }
    return parts.length === 1 ? parts[0]! : Buffer.concat(parts, size);
  }

  /** Answers the client with a coded error (before any response byte was sent). */
  private reject(err: InfermeterError): void {
    if (!this.res.headersSent && !this.clientGone) {
      const payload = err.body();
      // After a 413 the rest of the body is still on the wire: close rather than parse it as a request.
      const close = err.code === 'BODY_TOO_LARGE' ? { connection: 'close' } : {};
      this.res.writeHead(err.status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload), ...close });
      this.res.end(payload);
    } else {
      this.res.destroy();
    }
    this.status = err.status;
    if (err.code !== 'BODY_TOO_LARGE' && err.code !== 'BAD_REQUEST') {
      this.ctx.log.warn({ code: err.code, cause: errorCode(err.cause), route: this.route.route }, err.message);
    }
    this.finish(err.outcome, -1, err.code.toLowerCase());
  }

  private finish(outcome: Outcome, end: number, errorType: string | null): void {
    if (this.finished) return;
    this.finished = true;
    this.res.off('close', this.onClientClose);
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
      }),
    );
  }
}

function hasBody(req: IncomingMessage): boolean {
  const len = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (len !== undefined && len !== '0');
}
