/**
 * One load-client thread of bench/client-pool.ts: runs closedLoop for its share of the
 * streams and posts the samples back. Bodies come as a list (a function cannot cross a
 * thread), stream i sending bodies[i % length]: the benchmarks' bodies differ only by
 * model, i % 64.
 */
import { parentPort } from 'node:worker_threads';
import { closedLoop } from './lib.js';

export interface LoopJob {
  base: string;
  concurrency: number;
  durationMs: number;
  bodies: string[];
  collectOneWay: boolean;
  spreadMs: number;
  /** The API's path (chat, messages, responses). */
  path: string;
}

parentPort!.on('message', (job: LoopJob) => {
  closedLoop(job.base, job.concurrency, job.durationMs, (i) => job.bodies[i % job.bodies.length]!, job.collectOneWay, job.spreadMs, job.path).then(
    (samples) => parentPort!.postMessage({ samples }),
    (err: Error) => parentPort!.postMessage({ error: err.message }),
  );
});
