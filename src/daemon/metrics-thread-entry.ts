/** Entry point of the metrics worker thread (see side.ts for why it is a thread). */
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import type { Config } from '../config.js';
import { createLogger } from '../lib/log.js';
import { MetricsSide, type ReloadPlan, type ReloadResult } from '../side/side.js';
import type { ProxyState } from '../side/health.js';
import type { WireBatch } from '../record/record.js';
import type { ModelLists } from '../record/model-lists.js';
import type { ProxyLoopSample } from '../record/loop.js';

export type ToWorker =
  | { type: 'batch'; batch: WireBatch }
  | { type: 'loop'; source: number; sample: ProxyLoopSample }
  /** A proxy worker died: count what it had in flight (cluster primary only). */
  | { type: 'source-exit'; source: number }
  /** A proxy loop's listener: listening (it accepts connections), draining (the instance is shutting down). */
  | { type: 'proxy-state'; source: number; state: ProxyState }
  /** A reload resolved by the parent (daemon/reload.ts): apply it; `ask` answers a reload-request. */
  | { type: 'reload'; id: number; trigger: string; plan: ReloadPlan; ask?: number }
  | { type: 'close' };
export type FromWorker =
  | { type: 'ready'; port: number }
  | { type: 'closed' }
  | { type: 'fatal'; message: string }
  /** POST /-/reload reached the listener: the parent resolves it and sends a reload with this `ask`. */
  | { type: 'reload-request'; ask: number; trigger: string }
  /** A reload's result (whatever asked for it): the parent applies the log level and tells its workers. */
  | { type: 'reloaded'; id: number; result: ReloadResult }
  /** Several upstreams: each one's model list changed (or was read for the first time); the proxy loops route by it. */
  | { type: 'models'; lists: ModelLists };

const config = workerData as Config;
/** Nice value of the metrics thread: below every normal process, far from the lowest (19). */
const METRICS_THREAD_NICE = 10;
const log = createLogger(config.logLevel).child({ thread: 'metrics' });
yieldToProxy();
const side = new MetricsSide(config, log);
const port = parentPort!;
side.onModelLists = (lists) => port.postMessage({ type: 'models', lists } satisfies FromWorker);
/** POST /-/reload requests waiting for the parent's plan, by their `ask` id. */
const asked = new Map<number, (r: ReloadResult) => void>();
let askSeq = 0;
side.askReload = (trigger) => new Promise((resolve) => {
  const ask = ++askSeq;
  asked.set(ask, resolve);
  port.postMessage({ type: 'reload-request', ask, trigger } satisfies FromWorker);
});

port.on('message', (msg: ToWorker) => {
  if (msg.type === 'batch') side.ingestWire(msg.batch);
  else if (msg.type === 'loop') {
    side.proxyLoop.update(msg.source, msg.sample);
    side.health.beat(msg.source);
  } else if (msg.type === 'proxy-state') side.proxyState(msg.source, msg.state);
  else if (msg.type === 'reload') {
    const result = side.applyReload(msg.plan, msg.trigger);
    port.postMessage({ type: 'reloaded', id: msg.id, result } satisfies FromWorker);
    if (msg.ask !== undefined) {
      asked.get(msg.ask)?.(result);
      asked.delete(msg.ask);
    }
  } else if (msg.type === 'source-exit') side.sourceExited(msg.source);
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

/**
 * Everything on this thread (rendering a scrape, the collectors and the processes they
 * spawn) can wait a little; the proxy thread's chunks cannot. Raising this thread's nice
 * value makes the kernel hand a busy machine's CPU to the proxy first. Linux only (a
 * thread is a task with its own nice value there); elsewhere this does nothing.
 */
function yieldToProxy(): void {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (Number.isInteger(tid) && tid > 0) setPriority(tid, METRICS_THREAD_NICE);
  } catch (err) {
    log.debug({ err: (err as Error).message }, 'metrics thread keeps its priority');
  }
}
