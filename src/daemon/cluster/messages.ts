/** What the cluster primary and its proxy workers say to each other over the IPC channel. */
import type { ProxyLoopSample } from '../../record/loop.js';
import type { WireBatch } from '../../record/record.js';
import type { ModelLists } from '../../record/model-lists.js';

export type FromProxyWorker =
  /** Its message handler is in place: it can be sent the model lists (a message sent earlier could be lost). */
  | { type: 'started' }
  | { type: 'listening'; port: number }
  | { type: 'batch'; batch: WireBatch }
  | { type: 'loop'; sample: ProxyLoopSample }
  /** The listener could not be opened: the primary stops with this message. */
  | { type: 'fatal'; message: string };

export type ToProxyWorker =
  | { type: 'drain' }
  /** A config reload: the only live setting a proxy worker holds is its log level. */
  | { type: 'reload'; logLevel: string }
  /** The upstreams' model lists, read by the metrics side (several upstreams only): the worker routes by them. */
  | { type: 'models'; lists: ModelLists };

/** Environment of a forked worker: the resolved config (plain data) and the port to share. */
export const CONFIG_ENV = 'INFERMETER_WORKER_CONFIG';
export const PORT_ENV = 'INFERMETER_WORKER_PORT';
