/**
 * A fake inference-engine /metrics endpoint over a real socket: serves a captured scrape
 * (or any text) and can be switched into the faults the engine collector must survive.
 * Usable in-process (tests) or as a process:
 *   node dist/test/fakes/engine-metrics-server.js --port 9100 --fixture test/fixtures/x.prom
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

export type FaultMode =
  | 'ok' // 200 text/plain with the body
  | 'slow' // headers only after slowMs
  | 'html' // 200 text/html login page (a proxy or auth wall in front)
  | 'garbage' // 200 text/plain that is not exposition text
  | 'huge' // 200 text/plain, 50 MB streamed without content-length
  | 'not_found' // 404
  | 'down' // listener closed: connections refused
  | 'drop_every_other'; // every other request: socket closed without an answer

export interface FakeEngine {
  readonly url: string;
  readonly port: number;
  /** Requests answered so far (any mode). */
  readonly hits: number;
  /** Body bytes written in 'huge' mode so far (to check a client stopped reading). */
  readonly hugeBytesSent: number;
  setMode(mode: FaultMode): Promise<void>;
  setBody(text: string): void;
  close(): Promise<void>;
}

export interface FakeEngineOptions {
  body: string;
  port?: number;
  slowMs?: number;
  hugeBytes?: number;
}

const HTML = '<!DOCTYPE html>\n<html><head><title>Sign in</title></head><body><form>…</form></body></html>\n';
const GARBAGE = 'this is not prometheus\n{"error": "nope"}\n\x00\x01\x02 binary junk\n';

export async function startFakeEngine(options: FakeEngineOptions): Promise<FakeEngine> {
  let body = options.body;
  let mode: FaultMode = 'ok';
  let hits = 0;
  const huge = { sent: 0 };
  const slowMs = options.slowMs ?? 5_000;
  const hugeBytes = options.hugeBytes ?? 50 * 1024 * 1024;
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    hits++;
    if (req.url?.split('?')[0] !== '/metrics') {
      res.writeHead(404).end();
      return;
    }
    switch (mode) {
      case 'slow': {
        const t = setTimeout(() => {
          timers.delete(t);
          if (!res.destroyed) res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(body);
        }, slowMs);
        timers.add(t);
        return;
      }
      case 'html':
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(HTML);
        return;
      case 'garbage':
        res.writeHead(200, { 'content-type': 'text/plain' }).end(GARBAGE);
        return;
      case 'not_found':
        res.writeHead(404, { 'content-type': 'text/plain' }).end('Not Found\n');
        return;
      case 'huge':
        streamHuge(res, hugeBytes, huge);
        return;
      case 'drop_every_other':
        if (hits % 2 === 1) {
          req.socket.destroy();
          return;
        }
        res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(body);
        return;
      default:
        res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' }).end(body);
    }
  };

  let server: Server = createServer(handle);
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve((server.address() as AddressInfo).port));
    });
  const track = (s: Server) => s.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  track(server);
  const port = await listen(options.port ?? 0);

  const stop = async () => {
    for (const t of timers) clearTimeout(t);
    timers.clear();
    const s = server;
    const closed = new Promise<void>((resolve) => s.close(() => resolve()));
    for (const socket of sockets) socket.destroy();
    await closed;
  };

  return {
    url: `http://127.0.0.1:${port}/metrics`,
    port,
    get hits() {
      return hits;
    },
    get hugeBytesSent() {
      return huge.sent;
    },
    async setMode(next: FaultMode) {
      if (next === mode) return;
      if (next === 'down') await stop();
      if (mode === 'down') {
        server = createServer(handle);
        track(server);
        await listen(port);
      }
      mode = next;
    },
    setBody(text: string) {
      body = text;
    },
    async close() {
      if (mode !== 'down') await stop();
    },
  };
}

/** Valid-looking exposition lines, endlessly, until `bytes` or the client leaves. */
function streamHuge(res: ServerResponse, bytes: number, counter: { sent: number }): void {
  res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
  const line = 'vllm:num_requests_running{engine="0",model_name="m"} 1\n';
  const chunk = Buffer.from(line.repeat(Math.ceil(65536 / line.length)));
  let sent = 0;
  const pump = () => {
    while (sent < bytes && !res.destroyed) {
      sent += chunk.length;
      counter.sent += chunk.length;
      if (!res.write(chunk)) {
        res.once('drain', pump);
        return;
      }
    }
    if (!res.destroyed) res.end();
  };
  res.on('close', () => (sent = bytes));
  pump();
}

async function main(argv: string[]): Promise<void> {
  const arg = (name: string) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const fixture = arg('--fixture');
  const body = fixture ? readFileSync(fixture, 'utf8') : '';
  const fake = await startFakeEngine({ body, port: Number(arg('--port') ?? 0) });
  const mode = arg('--mode') as FaultMode | undefined;
  if (mode) await fake.setMode(mode);
  process.stdout.write(`${fake.url}\n`);
  process.once('SIGTERM', () => void fake.close().then(() => process.exit(0)));
}

// Only with a flag: `node --test dist/test` would otherwise start a server that never exits.
const asScript = import.meta.url === pathToFileURL(process.argv[1] ?? '').href;
if (asScript && (process.argv.includes('--port') || process.argv.includes('--fixture'))) void main(process.argv.slice(2));
