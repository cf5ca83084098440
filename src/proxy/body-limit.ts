/**
 * --body-limit: a body over it is refused at its headers when its Content-Length says so
 * (no `100 Continue` is sent for it: app.ts), else once the bytes read pass the limit. The 413
 * must reach the client: a client waiting for `100 Continue` sends no body after a final
 * answer, so its connection closes; any other client is sending the body right now, and a
 * socket closed with unread bytes resets the connection (RST), which can discard the 413
 * before the client reads it. So the rest of the body is read and discarded first (at most
 * DRAIN_CAP bytes), and the connection stays open for the client's next request.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { InfermeterError } from '../lib/errors.js';

/** The most a refused body's rest is read before the connection is cut (a client sending gigabytes is not waited on). */
export const DRAIN_CAP = 256 * 1024 * 1024;

/** The 413, naming the limit. */
export function tooLarge(limit: number): InfermeterError {
  return new InfermeterError('BODY_TOO_LARGE', { detail: `--body-limit is ${limit} bytes` });
}

/** A request whose declared body is over the limit: `100 Continue` is not sent for it. */
export function overLimit(req: IncomingMessage, limit: number): boolean {
  return Number(req.headers['content-length'] ?? 0) > limit;
}

function waitsForContinue(req: IncomingMessage): boolean {
  return /100-continue/i.test(String(req.headers.expect ?? ''));
}

/**
 * Sends the 413 with `payload`: reads the rest of the body away first (and keeps the
 * connection) when the client is sending one, or closes after the answer when it waits for
 * `100 Continue`, or when the declared rest is over DRAIN_CAP.
 */
export function refuseBody(req: IncomingMessage, res: ServerResponse, payload: string, limit: number): void {
  const declared = Number(req.headers['content-length'] ?? 0);
  const close = req.complete ? false : (waitsForContinue(req) && declared > limit) || declared > DRAIN_CAP;
  if (!req.complete && !close) {
    let drained = 0;
    req.removeAllListeners('data');
    req.on('data', (chunk: Buffer) => {
      drained += chunk.length;
      if (drained > DRAIN_CAP) req.socket.destroy();
    });
    // Flowing before the answer ends, so node:http does not dump (and stop counting) the body itself.
    req.resume();
  }
  res.writeHead(413, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload), ...(close ? { connection: 'close' } : {}) });
  res.end(payload);
}
