/**
 * The metrics thread of this process, seen from the proxy's thread (or the cluster primary's):
 * starts it with the config, carries batches to it, resolves every reload for it and asks it
 * to close (docs/architecture.md, the daemon room).
 *
 * Reloads: this side of the thread owns the running config and the flag table, so SIGHUP and a
 * POST /-/reload the metrics listener received both end here, in one resolution
 * (reload.ts); the thread is sent the plan, applies it and says what it did.
 */
import { Worker } from 'node:worker_threads';
import type { Config } from '../config.js';
import { BatchingSink } from '../record/sink.js';
import type { FromWorker, ToWorker } from './metrics-thread-entry.js';
import type { ReloadResult } from '../side/side.js';
import { Reloader } from './reload.js';
import type { ModelLists } from '../record/model-lists.js';

/** The metrics thread of this process: owns the metrics side (side.ts) and its listener. */
export class MetricsWorker {
  private readonly worker: Worker;
  private readonly reloader: Reloader;
  private reloadSeq = 0;
  private readonly reloading = new Map<number, (r: ReloadResult) => void>();
  readonly ready: Promise<number>;
  /** Every reload's result (SIGHUP or POST /-/reload), once the metrics side has applied it. */
  onReloaded: ((result: ReloadResult) => void) | null = null;
  /** The upstreams' model lists as the metrics side last read them (several upstreams only), and who routes by them. */
  private modelLists: ModelLists | null = null;
  private readonly listReaders: ((lists: ModelLists) => void)[] = [];

  constructor(config: Config) {
    this.reloader = new Reloader(config);
    this.worker = new Worker(new URL('./metrics-thread-entry.js', import.meta.url), { workerData: config });
    this.worker.unref();
    this.worker.on('message', (msg: FromWorker) => {
      if (msg.type === 'reload-request') this.send(msg.trigger, msg.ask);
      else if (msg.type === 'models') {
        this.modelLists = msg.lists;
        for (const read of this.listReaders) read(msg.lists);
      }
      else if (msg.type === 'reloaded') {
        this.reloading.get(msg.id)?.(msg.result);
        this.reloading.delete(msg.id);
        this.onReloaded?.(msg.result);
      }
    });
    this.ready = new Promise((resolve, reject) => {
      this.worker.on('message', (msg: FromWorker) => {
        if (msg.type === 'ready') resolve(msg.port);
        else if (msg.type === 'fatal') reject(new Error(msg.message));
      });
      this.worker.once('error', reject);
      this.worker.once('exit', (code) => reject(new Error(`metrics worker exited with code ${code}`)));
    });
  }

  /** The batch's record and input buffers are transferred, not copied. */
  post(msg: ToWorker): void {
    if (msg.type !== 'batch') return this.worker.postMessage(msg);
    const moved: ArrayBuffer[] = [];
    if (msg.batch.records) moved.push(msg.batch.records);
    if (msg.batch.inputs) moved.push(msg.batch.inputs.bytes);
    this.worker.postMessage(msg, moved);
  }

  /** Re-reads the config file (SIGHUP); resolves with what the metrics side did. */
  reload(trigger: string): Promise<ReloadResult> {
    return new Promise((resolve) => this.reloading.set(this.send(trigger), resolve));
  }

  /** Resolves a reload and sends the plan; `ask` is the metrics thread's own request id, when it asked. */
  private send(trigger: string, ask?: number): number {
    const id = ++this.reloadSeq;
    this.post({ type: 'reload', id, trigger, plan: this.reloader.plan(), ...(ask === undefined ? {} : { ask }) });
    return id;
  }

  /** Calls `read` with every model list the metrics side reads from now on, and with the latest one at once if there is one. */
  onModelLists(read: (lists: ModelLists) => void): void {
    this.listReaders.push(read);
    if (this.modelLists) read(this.modelLists);
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
