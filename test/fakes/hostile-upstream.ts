/**
 * An upstream that misbehaves on request: each request picks its fault with an `x-fault`
 * header (forwarded by the proxy like any other header). Bodies are deterministic from
 * `x-seed`, so a test can recompute exactly what the upstream sent.
 *
 *   stream            a normal SSE stream
 *   reset:N           send N body bytes, then reset the TCP connection
 *   stall:N           send N body bytes, then go silent (socket left open)
 *   close-after       full response advertising keep-alive, then close (as llama-server does)
 *   status:CODE       an HTML error page with that status
 *   truncate          Content-Length larger than the bytes sent, then close
 *   big:BYTES         a large SSE response, written with backpressure respected
 *   echo              JSON describing exactly what arrived (method, url, headers, body base64)
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export function streamBody(seed: number, events = 40): Buffer {
  let s = seed >>> 0;
  const rand = () => ((s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32);
  const words = ['alpha', ' beta', ' γάμμα', ' 日本', ' 🚀', ' "q"', ' \\ slash', '\n'];
  const parts = ['data: {"id":"h","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}\n\n'];
  for (let i = 0; i < events; i++) {
    const w = words[Math.floor(rand() * words.length)]!.repeat(1 + Math.floor(rand() * 5));
    parts.push(`data: ${JSON.stringify({ id: 'h', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: w }, finish_reason: null }] })}\n\n`);
  }
  parts.push(`data: {"id":"h","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":4,"completion_tokens":${events},"total_tokens":${events + 4}}}\n\ndata: [DONE]\n\n`);
  return Buffer.from(parts.join(''));
}

export interface Hostile {
  url: string;
  port: number;
  /** Requests whose connection the upstream saw closed before it finished. */
  closedEarly: number;
  requests: number;
  close(): Promise<void>;
}

export async function startHostileUpstream(): Promise<Hostile> {
  const sockets = new Set<Socket>();
  const state: Hostile = { url: '', port: 0, closedEarly: 0, requests: 0, close: async () => undefined };
  const server = createServer((req, res) => void handle(req, res, state));
  // Idle keep-alive sockets go away within a second, so leaked descriptors stand out.
  server.keepAliveTimeout = 1_000;
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  state.port = (server.address() as AddressInfo).port;
  state.url = `http://127.0.0.1:${state.port}`;
  state.close = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    });
  return state;
}

async function handle(req: IncomingMessage, res: ServerResponse, state: Hostile): Promise<void> {
  state.requests++;
  const parts: Buffer[] = [];
  for await (const c of req) parts.push(c as Buffer);
  const body = Buffer.concat(parts);
  res.on('close', () => {
    if (!res.writableFinished) state.closedEarly++;
  });
  if (req.url?.startsWith('/v1/models')) {
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"object":"list","data":[{"id":"hostile","object":"model"}]}');
    return;
  }
  const [kind, arg] = String(req.headers['x-fault'] ?? 'stream').split(':');
  const seed = Number(req.headers['x-seed'] ?? 1);
  const sse = streamBody(seed);
  switch (kind) {
    case 'echo':
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ method: req.method, url: req.url, headers: req.headers, body: body.toString('base64') }));
      return;
    case 'status':
      res.writeHead(Number(arg), { 'content-type': 'text/html' }).end(`<html><body><h1>${arg} upstream exploded</h1></body></html>`);
      return;
    case 'truncate':
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(sse.length + 100) });
      res.write(sse);
      setTimeout(() => res.socket?.destroy(), 20);
      return;
    case 'close-after':
      res.writeHead(200, { 'content-type': 'text/event-stream', connection: 'keep-alive', 'keep-alive': 'timeout=5, max=100' });
      res.end(sse, () => res.socket?.destroy());
      return;
    case 'reset':
    case 'stall': {
      const n = Math.min(Number(arg), sse.length);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.flushHeaders();
      if (n > 0) res.write(sse.subarray(0, n));
      if (kind === 'reset') setTimeout(() => res.socket?.resetAndDestroy(), 10);
      return;
    }
    case 'big': {
      const total = Number(arg);
      const line = Buffer.from(`data: {"choices":[{"index":0,"delta":{"content":"${'x'.repeat(980)}"}}]}\n\n`);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      let sent = 0;
      const pump = () => {
        while (sent < total) {
          sent += line.length;
          if (!res.write(line)) return void res.once('drain', pump);
        }
        res.end('data: [DONE]\n\n');
      };
      pump();
      return;
    }
    default:
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(sse);
  }
}
