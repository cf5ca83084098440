/** What the cluster primary and its proxy workers say to each other over the IPC channel. */
import type { ProxyLoopSample } from '../../record/loop.js';
import type { WireBatch } from '../../record/record.js';

export type FromProxyWorker =
  | { type: 'listening'; port: number }
  | { type: 'batch'; batch: WireBatch }
  | { type: 'loop'; sample: ProxyLoopSample }
  /** The listener could not be opened: the primary stops with this message. */
  | { type: 'fatal'; message: string };

export type ToProxyWorker =
  | { type: 'drain' }
  /** A config reload: the only live setting a proxy worker holds is its log level. */
  | { type: 'reload'; logLevel: string };

/** Environment of a forked worker: the resolved config (plain data) and the port to share. */
export const CONFIG_ENV = 'INFERMETER_WORKER_CONFIG';
export const PORT_ENV = 'INFERMETER_WORKER_PORT';
