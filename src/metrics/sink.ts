/**
 * The proxy side of the metrics hand-off: requests finish into a batch that is posted to
 * the metrics worker at most every FLUSH_MS. One postMessage per batch, not per request.
 */
import { Worker } from 'node:worker_threads';
import type { Config } from '../config.js';
import type { RecordBatch, RequestRecord } from './record.js';
import type { FromWorker, ToWorker } from './worker.js';
import { monitorProxyLoop, type ProxyLoopMonitor } from '../collectors/host/proxy-loop.js';

const LOOP_SAMPLE_MS = 5000;

const FLUSH_MS = 20;

export interface RecordSink {
  started(): void;
  finished(record: RequestRecord): void;
}

export class MetricsWorker implements RecordSink {
  private readonly worker: Worker;
  private pending: RequestRecord[] = [];
  private inFlight = 0;
  private timer: NodeJS.Timeout | null = null;
  readonly ready: Promise<number>;
  private readonly loop: ProxyLoopMonitor;
  private readonly loopTimer: NodeJS.Timeout;

  constructor(config: Config) {
    this.worker = new Worker(new URL('./worker.js', import.meta.url), { workerData: config });
    this.worker.unref();
    this.ready = new Promise((resolve, reject) => {
      const onMessage = (msg: FromWorker) => {
        if (msg.type === 'ready') resolve(msg.port);
        else if (msg.type === 'fatal') reject(new Error(msg.message));
      };
      this.worker.on('message', onMessage);
      this.worker.once('error', reject);
      this.worker.once('exit', (code) => reject(new Error(`metrics worker exited with code ${code}`)));
    });
    // The proxy loop's own delay can only be measured here, on the proxy thread.
    this.loop = monitorProxyLoop();
    this.loopTimer = setInterval(() => this.post({ type: 'loop', sample: this.loop.sample() }), LOOP_SAMPLE_MS);
    this.loopTimer.unref();
  }

  started(): void {
    this.inFlight++;
    this.schedule();
  }

  finished(record: RequestRecord): void {
    this.inFlight--;
    this.pending.push(record);
    this.schedule();
  }

  private schedule(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => this.flush(), FLUSH_MS);
  }

  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const batch: RecordBatch = { records: this.pending, inFlight: this.inFlight };
    this.pending = [];
    this.post({ type: 'batch', batch });
  }

  private post(msg: ToWorker): void {
    this.worker.postMessage(msg);
  }

  /** Flushes what is pending, stops collectors and the listener, and ends the thread. */
  async close(): Promise<void> {
    clearInterval(this.loopTimer);
    this.loop.stop();
    this.flush();
    await new Promise<void>((resolve) => {
      const t = setTimeout(() => void this.worker.terminate().then(() => resolve()), 5000);
      this.worker.on('message', (m: FromWorker) => {
        if (m.type === 'closed') {
          clearTimeout(t);
          resolve();
        }
      });
      this.worker.once('exit', () => {
        clearTimeout(t);
        resolve();
      });
      this.post({ type: 'close' });
    });
  }
}
