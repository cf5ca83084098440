/**
 * A fake OpenAI-compatible upstream: a real HTTP server whose behaviour each request picks
 * through a `fake` field in its JSON body (forwarded unchanged by the proxy). Runs in-process
 * or as its own process (`node dist/test/fakes/upstream.js [port]`, prints the port).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer, type ServerOptions as HttpsOptions } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { pathToFileURL } from 'node:url';

export interface FakeScript {
  /**
   * Stream a scripted schedule: each write at its time from the start (lateness never adds up),
   * or with `relativeGaps` each gap counted from the previous write (the upstream's own clock:
   * a busy machine stretches it as it stretches everything else on the loop).
   */
  schedule?: { firstMs: number; chunks: number; gapMs: number; usage?: number; promptTokens?: number; role?: boolean; reasoningChunks?: number; cachedTokens?: number; reasoningTokens?: number; relativeGaps?: boolean };
  /** Replay these bytes (base64), split into writes at these offsets, `delayMs` apart. */
  raw?: { b64: string; splits?: number[]; delayMs?: number; contentType?: string; resetAt?: number };
  /** Answer with this status and body. */
  status?: { code: number; body: string; contentType?: string };
  /** After `afterChunks` chunks: 'error' event, 'reset' the socket, or 'hang' forever. */
  fault?: { afterChunks: number; kind: 'error' | 'reset' | 'hang' };
  /** Wait this long before sending headers. */
  headersDelayMs?: number;
  /** Non-streaming JSON answer with usage. */
  json?: { content: string; promptTokens: number; completionTokens: number; delayMs?: number };
  /** Answer only once the test has opened this gate (FakeUpstream.release): an awaited event, not a delay. */
  gate?: string;
  /** A scheduled stream: after `afterChunks` writes, wait for this gate before the rest. */
  pause?: { afterChunks: number; gate: string };
}

export interface FakeEvent {
  kind: 'request' | 'closed-early' | 'finished';
  at: number;
  path: string;
  /** closed-early: the writes of a scheduled stream that went out before the close. */
  written?: number;
  headers?: Record<string, unknown>;
  body?: string;
}

export interface FakeUpstream {
  port: number;
  url: string;
  events: FakeEvent[];
  /** Opens a gate: requests waiting on it answer now, later ones at once. */
  release(gate: string): void;
  close(): Promise<void>;
}

/** Named gates requests can wait on (FakeScript.gate). */
class Gates {
  private readonly opened = new Set<string>();
  private readonly waiting = new Map<string, (() => void)[]>();

  wait(name: string): Promise<void> {
    if (this.opened.has(name)) return Promise.resolve();
    return new Promise((resolve) => this.waiting.set(name, [...(this.waiting.get(name) ?? []), resolve]));
  }

  release(name: string): void {
    this.opened.add(name);
    for (const resolve of this.waiting.get(name) ?? []) resolve();
    this.waiting.delete(name);
  }
}

const MODELS = ['fake-model', 'fake-model-2'];

function chunk(id: string, delta: Record<string, unknown>, finish: string | null = null, extra: Record<string, unknown> = {}): string {
  return `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 1, model: 'fake-model', choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }], ...extra })}\n\n`;
}

export function scheduledStream(s: NonNullable<FakeScript['schedule']>, includeUsage: boolean): { at: number; data: string }[] {
  const id = 'chatcmpl-fake';
  const out: { at: number; data: string }[] = [];
  if (s.role !== false) out.push({ at: 0, data: chunk(id, { role: 'assistant', content: '' }) });
  let t = s.firstMs;
  for (let i = 0; i < (s.reasoningChunks ?? 0); i++) {
    out.push({ at: t, data: chunk(id, { reasoning_content: `think${i} ` }) });
    t += s.gapMs;
  }
  for (let i = 0; i < s.chunks; i++) {
    out.push({ at: t, data: chunk(id, { content: `tok${i} ` }, i === s.chunks - 1 ? 'stop' : null) });
    if (i < s.chunks - 1) t += s.gapMs;
  }
  if (includeUsage) {
    const completion = s.usage ?? s.chunks + (s.reasoningChunks ?? 0);
    const prompt = s.promptTokens ?? 7;
    const usage: Record<string, unknown> = { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
    if (s.cachedTokens !== undefined) usage['prompt_tokens_details'] = { cached_tokens: s.cachedTokens };
    if (s.reasoningTokens !== undefined) usage['completion_tokens_details'] = { reasoning_tokens: s.reasoningTokens };
    out.push({ at: t, data: `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 1, model: 'fake-model', choices: [], usage })}\n\n` });
  }
  out.push({ at: t, data: 'data: [DONE]\n\n' });
  return out;
}

/**
 * `tls`: serve HTTPS with these options (cert, key; ca + requestCert for mTLS). `models`: what
 * its /v1/models lists (two upstreams behind one infermeter serve different models).
 */
export async function startFakeUpstream(port = 0, host = '127.0.0.1', tls?: HttpsOptions, models: readonly string[] = MODELS): Promise<FakeUpstream> {
  const events: FakeEvent[] = [];
  const gates = new Gates();
  const sockets = new Set<Socket>();
  const handler = (req: IncomingMessage, res: ServerResponse) => void handle(req, res, events, gates, models);
  const server: Server = (tls ? createHttpsServer(tls, handler) : createServer(handler)) as Server;
  server.keepAliveTimeout = 1_000; // idle sockets close quickly, so leaked ones stand out
  server.on(tls ? 'secureConnection' : 'connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  const bound = (server.address() as AddressInfo).port;
  return {
    port: bound,
    url: `${tls ? 'https' : 'http'}://${host}:${bound}`,
    events,
    release: (gate) => gates.release(gate),
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

async function readBody(req: IncomingMessage): Promise<string> {
  const parts: Buffer[] = [];
  for await (const c of req) parts.push(c as Buffer);
  return Buffer.concat(parts).toString('utf8');
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function handle(req: IncomingMessage, res: ServerResponse, events: FakeEvent[], gates: Gates, models: readonly string[]): Promise<void> {
  const path = req.url ?? '/';
  const body = await readBody(req);
  events.push({ kind: 'request', at: performance.now(), path, headers: { ...req.headers }, body });
  let closedEarly = false;
  let sent = 0;
  res.on('close', () => {
    if (!res.writableFinished) {
      closedEarly = true;
      events.push({ kind: 'closed-early', at: performance.now(), path, written: sent });
    }
  });
  if (path.startsWith('/v1/models')) {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data: models.map((id) => ({ id, object: 'model' })) }));
    return;
  }
  let doc: { stream?: boolean; stream_options?: { include_usage?: boolean }; fake?: FakeScript } = {};
  try {
    doc = JSON.parse(body) as typeof doc;
  } catch {
    /* not JSON: echo below */
  }
  const script = doc.fake ?? {};
  if (script.gate !== undefined) await gates.wait(script.gate);
  if (script.headersDelayMs) await sleep(script.headersDelayMs);
  if (closedEarly) return;
  if (script.status) {
    res.writeHead(script.status.code, { 'content-type': script.status.contentType ?? 'application/json' }).end(script.status.body);
    return;
  }
  if (script.json) {
    if (script.json.delayMs) await sleep(script.json.delayMs);
    const { content, promptTokens, completionTokens } = script.json;
    res.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({ id: 'chatcmpl-fake', object: 'chat.completion', created: 1, model: 'fake-model', choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }], usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens } }),
    );
    return;
  }
  if (script.raw) {
    const bytes = Buffer.from(script.raw.b64, 'base64');
    res.writeHead(200, { 'content-type': script.raw.contentType ?? 'text/event-stream' });
    res.flushHeaders();
    let from = 0;
    const start = performance.now();
    let k = 0;
    const resetAt = script.raw.resetAt;
    for (const at of [...(script.raw.splits ?? []), bytes.length]) {
      if (closedEarly) return;
      if (resetAt !== undefined && at > resetAt) {
        // The engine drops the connection mid-body: what was written leaves, then the socket dies.
        res.write(bytes.subarray(from, resetAt));
        await sleep(20);
        res.socket?.destroy();
        return;
      }
      if (at > from) res.write(bytes.subarray(from, at));
      from = Math.max(from, at);
      // Absolute schedule: write k goes out at start + k × delay, so lateness never accumulates.
      const wait = start + ++k * (script.raw.delayMs ?? 0) - performance.now();
      if (script.raw.delayMs && wait > 0) await sleep(wait);
    }
    res.end();
    events.push({ kind: 'finished', at: performance.now(), path });
    return;
  }
  if (script.schedule || doc.stream) {
    const s = script.schedule ?? { firstMs: 5, chunks: 5, gapMs: 2 };
    const plan = scheduledStream(s, doc.stream_options?.include_usage === true);
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.flushHeaders();
    const start = performance.now();
    let last = { wroteAt: start, at: 0 };
    for (const step of plan) {
      const wait = (s.relativeGaps ? last.wroteAt + step.at - last.at : start + step.at) - performance.now();
      if (wait > 0) await sleep(wait);
      if (closedEarly) return;
      const f = script.fault;
      if (f && sent === f.afterChunks) {
        if (f.kind === 'error') {
          res.end('data: {"error":{"message":"injected failure","type":"server_error","code":500}}\n\n');
          return;
        }
        if (f.kind === 'reset') {
          res.socket?.resetAndDestroy();
          return;
        }
        return; // hang: never write again
      }
      res.write(step.data);
      sent++;
      last = { wroteAt: performance.now(), at: step.at };
      if (script.pause && sent === script.pause.afterChunks) await gates.wait(script.pause.gate);
    }
    res.end();
    events.push({ kind: 'finished', at: performance.now(), path });
    return;
  }
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ echo: path, method: req.method, body }));
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const fake = await startFakeUpstream(Number(process.argv[2] ?? 0));
  process.stdout.write(`${fake.port}\n`);
  process.on('SIGTERM', () => void fake.close().then(() => process.exit(0)));
}
