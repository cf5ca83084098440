/** What the proxy reads of a request before its body: the model a models path names, whether a body follows. Pure. */
import type { IncomingMessage } from 'node:http';

/** The model a `/v1/models/<id>` path names (null for the list itself). */
export function modelInPath(path: string): string | null {
  const m = /^\/v1\/models\/([^?]+)/.exec(path);
  if (!m) return null;
  try {
    return decodeURIComponent(m[1]!);
  } catch {
    return m[1]!;
  }
}

/** The request declares a body (chunked, or a non-zero length). */
export function hasBody(req: IncomingMessage): boolean {
  const len = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (len !== undefined && len !== '0');
}
