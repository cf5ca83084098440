/**
 * The load client on more than one core: BENCH_CLIENT_THREADS worker threads (default 1:
 * this thread alone), each running closedLoop for its share of the streams. One Node
 * thread reads on the order of 100,000 chunks/s; a proxy with 8 workers relays more, so on
 * a machine with cores to spare the client must not be what sets the knee.
 */
import { Worker } from 'node:worker_threads';
import { closedLoop, type StreamSample } from './lib.js';
import type { LoopJob } from './client-thread.js';

/** The benchmarks' bodies differ only by model (i % 64): the list a thread sends from. */
const BODIES = 64;

export class ClientPool {
  private readonly workers: Worker[];

  constructor(readonly threads: number) {
    if (!Number.isInteger(threads) || threads < 1) throw new Error(`BENCH_CLIENT_THREADS: expected a whole number >= 1, got "${threads}"`);
    this.workers = threads > 1 ? Array.from({ length: threads }, () => new Worker(new URL('./client-thread.js', import.meta.url))) : [];
  }

  /** closedLoop over the threads: streams split as evenly as they go, samples pooled. */
  async closedLoop(base: string, concurrency: number, durationMs: number, bodyFor: (i: number) => string, collectOneWay = true, spreadMs = 0, path = '/v1/chat/completions'): Promise<StreamSample[]> {
    if (this.workers.length === 0) return closedLoop(base, concurrency, durationMs, bodyFor, collectOneWay, spreadMs, path);
    const bodies = Array.from({ length: BODIES }, (_, i) => bodyFor(i));
    const shares = this.workers.map((_, k) => Math.floor(concurrency / this.workers.length) + (k < concurrency % this.workers.length ? 1 : 0));
    const parts = await Promise.all(this.workers.map((w, k) => (shares[k]! > 0 ? this.run(w, { base, concurrency: shares[k]!, durationMs, bodies, collectOneWay, spreadMs, path }) : Promise.resolve([]))));
    return parts.flat();
  }

  private run(w: Worker, job: LoopJob): Promise<StreamSample[]> {
    return new Promise((resolve, reject) => {
      w.once('message', (m: { samples?: StreamSample[]; error?: string }) => (m.error ? reject(new Error(m.error)) : resolve(m.samples!)));
      w.postMessage(job);
    });
  }

  close(): Promise<number[]> {
    return Promise.all(this.workers.map((w) => w.terminate()));
  }
}

export const clientPool = new ClientPool(Number(process.env['BENCH_CLIENT_THREADS'] ?? 1));
