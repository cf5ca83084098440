/**
 * GET /metrics on the metrics listener: the registry in the exposition the scraper asks for
 * (negotiate.ts): the 0.0.4 text, OpenMetrics (exemplars), or protobuf (native histograms).
 * The answer varies by Accept, and says so.
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { Routes } from '../../metrics/consumer.js';
import { chooseExposition } from './negotiate.js';
import { OPENMETRICS_CONTENT_TYPE, renderOpenMetrics } from './openmetrics.js';
import { encodeRegistry, PROTOBUF_CONTENT_TYPE } from './proto.js';

export function metricsRoutes(registry: Registry, log: Logger): Routes {
  return (app) => {
    app.get('/metrics', async (req, reply) => {
      try {
        // Native histograms travel only in the protobuf exposition (see negotiate.ts).
        const format = chooseExposition(req.headers.accept);
        const body = format === 'protobuf' ? await encodeRegistry(registry) : format === 'openmetrics' ? await renderOpenMetrics(registry) : await registry.metrics();
        const type = format === 'protobuf' ? PROTOBUF_CONTENT_TYPE : format === 'openmetrics' ? OPENMETRICS_CONTENT_TYPE : registry.contentType;
        return reply.code(200).headers({ 'content-type': type, vary: 'Accept' }).send(body);
      } catch (err) {
        log.error({ err: (err as Error).message }, 'rendering /metrics failed');
        return reply.code(500).header('content-type', 'text/plain').send('metrics rendering failed\n');
      }
    });
  };
}
