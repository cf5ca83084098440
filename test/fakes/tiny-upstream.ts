/**
 * A tiny OpenAI-compatible upstream for the OTLP and packaging tests: /v1/models, and
 * /v1/chat/completions streaming a fixed number of content chunks (vLLM's shape, usage in
 * a final `choices: []` chunk when asked) or answering in one JSON body.
 * The simulator (`infermeter simulate`) is the full-featured fake; this one has no timing
 * model, so the counts a test asserts are exact.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export const TINY_MODEL = 'tiny-model';
export const PROMPT_TOKENS = 5;

export class TinyUpstream {
  private server: Server | null = null;
  chatRequests = 0;

  constructor(private readonly tokens = 4) {}

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (req.url === '/v1/models') {
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data: [{ id: TINY_MODEL, object: 'model' }] }));
          return;
        }
        if (req.url !== '/v1/chat/completions' || req.method !== 'POST') {
          res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
          return;
        }
        this.chatRequests++;
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as { stream?: boolean; stream_options?: { include_usage?: boolean } };
        if (body.stream) this.stream(res, body.stream_options?.include_usage === true);
        else this.whole(res);
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  private usage() {
    return { prompt_tokens: PROMPT_TOKENS, completion_tokens: this.tokens, total_tokens: PROMPT_TOKENS + this.tokens };
  }

  private stream(res: import('node:http').ServerResponse, includeUsage: boolean): void {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const base = { id: 'chatcmpl-tiny', object: 'chat.completion.chunk', created: 1, model: TINY_MODEL };
    res.write(`data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] })}\n\n`);
    let i = 0;
    const next = () => {
      if (i < this.tokens) {
        const last = i === this.tokens - 1;
        res.write(`data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: { content: ` t${i}` }, finish_reason: last ? 'stop' : null }] })}\n\n`);
        i++;
        setTimeout(next, 2);
        return;
      }
      if (includeUsage) res.write(`data: ${JSON.stringify({ ...base, choices: [], usage: this.usage() })}\n\n`);
      res.end('data: [DONE]\n\n');
    };
    setTimeout(next, 2);
  }

  private whole(res: import('node:http').ServerResponse): void {
    const text = Array.from({ length: this.tokens }, (_, i) => `t${i}`).join(' ');
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({
      id: 'chatcmpl-tiny', object: 'chat.completion', created: 1, model: TINY_MODEL,
      choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
      usage: this.usage(),
    }));
  }

  async close(): Promise<void> {
    const s = this.server;
    if (!s) return;
    await new Promise<void>((resolve) => s.close(() => resolve()));
    s.closeAllConnections();
  }
}
