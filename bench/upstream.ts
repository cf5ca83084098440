/**
 * A lean streaming upstream for benchmarks (its own process): every content chunk carries,
 * in an SSE comment line before its event, the moment it was written (`ts`), and the first
 * one also the moment the request arrived (`arr`), both on the machine-wide monotonic clock (ms), so a client on the same machine
 * can split a stream's time into proxy hops and upstream think time.
 * Body: {"model", "bench": {firstMs, chunks, gapMs}}. /v1/messages and /v1/responses answer in
 * those APIs' events, the same chunks, stamps and timing.
 * BENCH_UPSTREAM_PROCS=N (default 1) serves from N processes on one port (node:cluster;
 * workers given port 0 share the one port the primary picked), for loads one core cannot
 * write; the stamps stay comparable, the clock being the machine's.
 */
import cluster from 'node:cluster';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { monoMs } from './lib.js';

const MODELS = Array.from({ length: Number(process.env['BENCH_MODELS'] ?? 64) }, (_, i) => `bench-model-${i}`);

const server = createServer((req, res) => {
  if (req.url?.startsWith('/v1/models')) {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data: MODELS.map((id) => ({ id, object: 'model' })) }));
    return;
  }
  let arrived = 0;
  const parts: Buffer[] = [];
  req.on('data', (c: Buffer) => parts.push(c));
  req.on('end', () => {
    arrived = monoMs();
    let spec = { firstMs: 20, chunks: 20, gapMs: 10 };
    let model = 'bench-model-0';
    let usage = false;
    try {
      const doc = JSON.parse(Buffer.concat(parts).toString()) as { model?: string; bench?: typeof spec; stream_options?: { include_usage?: boolean } };
      spec = { ...spec, ...doc.bench };
      model = doc.model ?? model;
      usage = doc.stream_options?.include_usage === true;
    } catch {
      /* defaults */
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const api = API_EVENTS[req.url?.split('?')[0] ?? ''];
    if (api) return typedStream(res, api, model, spec, arrived);
    res.write(`data: {"id":"b","object":"chat.completion.chunk","model":"${model}","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}\n\n`);
    let sent = 0;
    let closed = false;
    res.on('close', () => (closed = true));
    const send = () => {
      if (closed) return;
      if (sent < spec.chunks) {
        // The stamps ride in an SSE comment line, which every client ignores: the event itself is
        // shaped as an engine's, the same bytes from one chunk to the next but for the token.
        res.write(`: ts=${monoMs()}${sent === 0 ? ` arr=${arrived}` : ''}\ndata: {"id":"chatcmpl-b","object":"chat.completion.chunk","created":1,"model":"${model}","choices":[{"index":0,"delta":{"content":" tok${sent}"},"logprobs":null,"finish_reason":null}]}\n\n`);
        sent++;
        if (spec.gapMs > 0) setTimeout(send, spec.gapMs);
        else setImmediate(send);
        return;
      }
      if (usage) res.write(`data: {"id":"b","object":"chat.completion.chunk","model":"${model}","choices":[],"usage":{"prompt_tokens":8,"completion_tokens":${spec.chunks},"total_tokens":${spec.chunks + 8}}}\n\n`);
      res.end('data: [DONE]\n\n');
    };
    setTimeout(send, spec.firstMs);
  });
});
/**
 * The Messages and Responses APIs' streams in vLLM's shapes (src/sim/typed.ts, the fixtures):
 * an opening, one token event per chunk (stamped like chat's), a closing with usage.
 */
interface ApiEvents {
  open(model: string): string;
  token(i: number): string;
  close(model: string, chunks: number): string;
}
const ev = (type: string, json: string) => `event: ${type}\ndata: ${json}\n\n`;
const API_EVENTS: Record<string, ApiEvents> = {
  '/v1/messages': {
    open: (model) => ev('message_start', `{"type":"message_start","message":{"id":"chatcmpl-b","content":[],"model":"${model}","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":8,"output_tokens":0}}}`)
      + ev('content_block_start', '{"type":"content_block_start","content_block":{"type":"text","text":""},"index":0}'),
    token: (i) => ev('content_block_delta', `{"type":"content_block_delta","delta":{"type":"text_delta","text":" tok${i}"},"index":0}`),
    close: (_model, n) => ev('content_block_stop', '{"type":"content_block_stop","index":0}')
      + ev('message_delta', `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":8,"output_tokens":${n}}}`)
      + ev('message_stop', '{"type":"message_stop"}'),
  },
  '/v1/responses': {
    open: (model) => ev('response.created', `{"response":{"id":"resp_b","object":"response","model":"${model}","output":[],"status":"in_progress","usage":null},"sequence_number":0,"type":"response.created"}`)
      + ev('response.output_item.added', '{"item":{"id":"msg_b","content":[],"role":"assistant","status":"in_progress","type":"message"},"output_index":0,"sequence_number":1,"type":"response.output_item.added"}'),
    token: (i) => ev('response.output_text.delta', `{"content_index":0,"delta":" tok${i}","item_id":"msg_b","logprobs":[],"output_index":0,"sequence_number":${i + 2},"type":"response.output_text.delta"}`),
    close: (model, n) => ev('response.completed', `{"response":{"id":"resp_b","object":"response","model":"${model}","output":[],"status":"completed","usage":{"input_tokens":8,"input_tokens_details":{"cached_tokens":0},"output_tokens":${n},"output_tokens_details":{"reasoning_tokens":0},"total_tokens":${n + 8}}},"sequence_number":${n + 2},"type":"response.completed"}`),
  },
};

function typedStream(res: import('node:http').ServerResponse, api: ApiEvents, model: string, spec: { firstMs: number; chunks: number; gapMs: number }, arrived: number): void {
  res.write(api.open(model));
  let sent = 0;
  let closed = false;
  res.on('close', () => (closed = true));
  const send = () => {
    if (closed) return;
    if (sent < spec.chunks) {
      res.write(`: ts=${monoMs()}${sent === 0 ? ` arr=${arrived}` : ''}\n${api.token(sent)}`);
      sent++;
      if (spec.gapMs > 0) setTimeout(send, spec.gapMs);
      else setImmediate(send);
      return;
    }
    res.end(api.close(model, spec.chunks));
  };
  setTimeout(send, spec.firstMs);
}

server.keepAliveTimeout = Number(process.env['BENCH_KEEPALIVE_MS'] ?? 60_000);
const PROCS = Number(process.env['BENCH_UPSTREAM_PROCS'] ?? 1);
if (!Number.isInteger(PROCS) || PROCS < 1) throw new Error(`BENCH_UPSTREAM_PROCS: expected a whole number >= 1, got "${process.env['BENCH_UPSTREAM_PROCS']}"`);
if (PROCS > 1 && cluster.isPrimary) {
  // Each worker listens on its own; the port is printed once all of them are.
  let listening = 0;
  cluster.on('listening', (_w, address) => {
    if (++listening === PROCS) process.stdout.write(`${address.port}\n`);
  });
  for (let i = 0; i < PROCS; i++) cluster.fork();
  process.on('SIGTERM', () => {
    for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGTERM');
    process.exit(0);
  });
} else {
  server.listen(Number(process.argv[2] ?? 0), '127.0.0.1', () => {
    if (cluster.isPrimary) process.stdout.write(`${(server.address() as AddressInfo).port}\n`);
  });
  process.on('SIGTERM', () => process.exit(0));
}
