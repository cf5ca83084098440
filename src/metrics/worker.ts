/** Entry point of the metrics worker thread (see side.ts for why it is a thread). */
import { parentPort, workerData } from 'node:worker_threads';
import type { Config } from '../config.js';
import { createLogger } from '../lib/log.js';
import { MetricsSide } from './side.js';
import type { RecordBatch } from './record.js';
import type { ProxyLoopSample } from '../collectors/host/proxy-loop.js';

export type ToWorker = { type: 'batch'; batch: RecordBatch } | { type: 'loop'; sample: ProxyLoopSample } | { type: 'close' };
export type FromWorker = { type: 'ready'; port: number } | { type: 'closed' } | { type: 'fatal'; message: string };

const config = workerData as Config;
const log = createLogger(config.logLevel).child({ thread: 'metrics' });
const side = new MetricsSide(config, log);
const port = parentPort!;

port.on('message', (msg: ToWorker) => {
  if (msg.type === 'batch') side.ingest(msg.batch);
  else if (msg.type === 'loop') side.proxyLoop.update(msg.sample);
  else if (msg.type === 'close') {
    void side.close().then(() => {
      port.postMessage({ type: 'closed' } satisfies FromWorker);
      port.close();
    });
  }
});

side.start().then(
  (p) => port.postMessage({ type: 'ready', port: p } satisfies FromWorker),
  (err: Error) => port.postMessage({ type: 'fatal', message: `--metrics-listen: cannot listen: ${err.message}` } satisfies FromWorker),
);
