/**
 * Fetches an engine's /metrics text: the only I/O of the engine collector. Every way it
 * can fail maps to one bounded CollectorError kind (infermeter_collector_errors_total).
 */
import { Agent, request, type Dispatcher } from 'undici';
import { errorCode } from '../../lib/errors.js';
import { CollectorError } from '../types.js';

export const DEFAULT_MAX_SCRAPE_BYTES = 20 * 1024 * 1024;

const STALE_SOCKET = new Set(['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE']);

/** Ask for the classic text format; prometheus_client would otherwise answer OpenMetrics. */
const ACCEPT = 'text/plain;version=0.0.4;q=1,*/*;q=0.1';

export class ScrapeClient {
  private readonly agent: Agent;

  constructor(
    private readonly url: string,
    private readonly maxBytes = DEFAULT_MAX_SCRAPE_BYTES,
    connect?: import('node:tls').ConnectionOptions,
  ) {
    this.agent = new Agent({ connections: 1, pipelining: 1, keepAliveTimeout: 30_000, connect });
  }

  /** The body as text; throws CollectorError (unreachable, timeout, http_status, not_prometheus, too_large). */
  async fetch(signal: AbortSignal): Promise<string> {
    try {
      return await this.fetchOnce(signal).catch((err: unknown) => {
        // A kept-alive socket the engine closed under us (llama-server does) is not an
        // engine failure: try once more on a fresh connection. A scrape is idempotent.
        if (signal.aborted || !STALE_SOCKET.has(errorCode(err))) throw err;
        return this.fetchOnce(signal);
      });
    } catch (err) {
      if (err instanceof CollectorError) throw err;
      if (signal.aborted) throw new CollectorError('timeout', `no answer from ${this.url} in time`, { cause: err });
      throw new CollectorError('unreachable', `cannot scrape ${this.url}: ${errorCode(err)}`, { cause: err });
    }
  }

  private async fetchOnce(signal: AbortSignal): Promise<string> {
    const res = await request(this.url, { dispatcher: this.agent, signal, headers: { accept: ACCEPT } });
    if (res.statusCode !== 200) {
      discard(res.body);
      throw new CollectorError('http_status', `${this.url} answered HTTP ${res.statusCode}`);
    }
    const type = String(res.headers['content-type'] ?? '');
    if (/html|json/i.test(type)) {
      discard(res.body);
      throw new CollectorError('not_prometheus', `${this.url} answered ${type}, not Prometheus text`);
    }
    const declared = Number(res.headers['content-length']);
    if (declared > this.maxBytes) {
      discard(res.body);
      throw this.tooLarge(declared);
    }
    const chunks: Buffer[] = [];
    let total = 0;
    for await (const chunk of res.body as AsyncIterable<Buffer>) {
      total += chunk.length;
      if (total > this.maxBytes) {
        discard(res.body); // read no further
        throw this.tooLarge(total);
      }
      chunks.push(chunk);
    }
    return Buffer.concat(chunks, total).toString('utf8');
  }

  private tooLarge(bytes: number): CollectorError {
    return new CollectorError('too_large', `${this.url} body exceeds ${this.maxBytes} bytes (at least ${bytes})`);
  }

  async close(): Promise<void> {
    await this.agent.close();
  }
}

/** Drops a body unread. undici's body emits an AbortError when destroyed; nobody needs it. */
function discard(body: Dispatcher.ResponseData['body']): void {
  body.on('error', () => {});
  body.destroy();
}
