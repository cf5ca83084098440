/**
 * The metrics thread of this process, seen from the proxy's thread: starts it with the config,
 * carries batches to it, asks it to reload and to close (docs/architecture.md, the daemon room).
 */
import { Worker } from 'node:worker_threads';
import type { Config } from '../config.js';
import { BatchingSink } from '../record/sink.js';
import type { FromWorker, ToWorker } from './metrics-thread-entry.js';
import type { ReloadResult } from '../side/side.js';

/** The metrics thread of this process: owns the metrics side (side.ts) and its listener. */
export class MetricsWorker {
  private readonly worker: Worker;
  readonly ready: Promise<number>;
  /** Every reload's result (SIGHUP or POST /-/reload), once the metrics side has applied it. */
  onReloaded: ((result: ReloadResult) => void) | null = null;

  constructor(config: Config) {
    this.worker = new Worker(new URL('./metrics-thread-entry.js', import.meta.url), { workerData: config });
    this.worker.unref();
    this.ready = new Promise((resolve, reject) => {
      const onMessage = (msg: FromWorker) => {
        if (msg.type === 'ready') resolve(msg.port);
        else if (msg.type === 'fatal') reject(new Error(msg.message));
        else if (msg.type === 'reloaded') this.onReloaded?.(msg.result);
      };
      this.worker.on('message', onMessage);
      this.worker.once('error', reject);
      this.worker.once('exit', (code) => reject(new Error(`metrics worker exited with code ${code}`)));
    });
  }

  /** The batch's record buffer is transferred, not copied. */
  post(msg: ToWorker): void {
    if (msg.type === 'batch' && msg.batch.records) this.worker.postMessage(msg, [msg.batch.records]);
    else this.worker.postMessage(msg);
  }

  /** Asks the metrics side to re-read the config file; resolves with what it did. */
  reload(trigger: string): Promise<ReloadResult> {
    return new Promise((resolve) => {
      const onMessage = (m: FromWorker) => {
        if (m.type !== 'reloaded') return;
        this.worker.off('message', onMessage);
        resolve(m.result);
      };
      this.worker.on('message', onMessage);
      this.post({ type: 'reload', trigger });
    });
  }

  /** A sink for a proxy loop in this process. */
  sink(source = 0): BatchingSink {
    return new BatchingSink(source, (batch) => this.post({ type: 'batch', batch }), (sample) => this.post({ type: 'loop', source, sample }));
  }

  /** Stops collectors and the listener, and ends the thread (flush the sinks first). */
  async close(): Promise<void> {
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
