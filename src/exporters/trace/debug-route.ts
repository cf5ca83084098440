/**
 * GET /debug/requests on the metrics listener: the slow-request log as JSON
 * (`?model=<label>` for one model). Timings, counts and ids only.
 */
import type { ServerResponse } from 'node:http';
import type { SlowLog } from './slow-log.js';

export function serveDebugRequests(log: SlowLog, url: string, method: string, res: ServerResponse): void {
  const model = new URL(url, 'http://x').searchParams.get('model') ?? undefined;
  const body = JSON.stringify(log.snapshot(model), null, 1);
  res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(method === 'HEAD' ? undefined : body);
}
