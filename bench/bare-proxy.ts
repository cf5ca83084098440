/**
 * The floor of Node's own HTTP stack, for bench:proxy: a reverse proxy in plain `node:http`
 * and an undici dispatch handler, with nothing else (no Fastify, no metering, no metrics
 * thread). What infermeter adds beyond this is infermeter's; what this adds is Node's.
 * Prints its port; argv[2] is the upstream origin.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Pool, type Dispatcher } from 'undici';

const pool = new Pool(process.argv[2]!, { connections: 4096 });

const server = createServer((req, res) => {
  const parts: Buffer[] = [];
  req.on('data', (c: Buffer) => parts.push(c));
  req.on('end', () => {
    const body = Buffer.concat(parts);
    const handler: Dispatcher.DispatchHandler = {
      // undici takes a handler for the new-style API only when it has onRequestStart.
      onRequestStart() {},
      onResponseStart(_c, status, headers) {
        res.writeHead(status, { 'content-type': String(headers['content-type'] ?? 'application/octet-stream') });
        process.nextTick(() => res.headersSent || res.flushHeaders());
      },
      onResponseData(_c, chunk) {
        res.write(chunk);
      },
      onResponseEnd() {
        res.end();
      },
      onResponseError() {
        res.destroy();
      },
    };
    pool.dispatch({ path: req.url!, method: req.method as Dispatcher.HttpMethod, headers: { 'content-type': 'application/json', 'content-length': String(body.length) }, body }, handler);
  });
});
server.keepAliveTimeout = 65_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`${(server.address() as AddressInfo).port}\n`));
process.on('SIGTERM', () => process.exit(0));
