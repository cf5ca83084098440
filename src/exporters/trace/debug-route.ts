/**
 * GET /debug/requests on the metrics listener: the slow-request log as JSON
 * (`?model=<label>` for one model). Timings, counts and ids only.
 */
import type { Routes } from '../../metrics/consumer.js';
import type { SlowLog } from './slow-log.js';

export function debugRequestsRoutes(log: SlowLog): Routes {
  return (app) => {
    app.get('/debug/requests', (req, reply) => {
      const model = new URL(req.url, 'http://x').searchParams.get('model') ?? undefined;
      // A Buffer: Fastify leaves the content type of a Buffer as it is given.
      const body = Buffer.from(JSON.stringify(log.snapshot(model), null, 1));
      return reply.code(200).headers({ 'content-type': 'application/json', 'cache-control': 'no-store' }).send(body);
    });
  };
}
