/**
 * The steps both ways of running share (one process, or a --workers cluster: cluster/primary.ts):
 * the metrics thread, the proxy listener, the drain. main.ts and cluster/ import them from here,
 * so neither imports the other.
 */
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { App } from '../proxy/app.js';
import type { Config } from '../config.js';
import { MetricsWorker } from './metrics-thread.js';
import type { ReloadResult } from '../side/side.js';
import { listenGate } from '../lib/test-hooks.js';
import { checkUpstreamAtStart } from './upstream-check.js';

export interface Running {
  proxyPort: number;
  metricsPort: number;
  /** Graceful: in-flight streams get up to --shutdown-timeout. */
  close(): Promise<void>;
  /** Re-reads the config file (SIGHUP); a bad file keeps the running config. */
  reload(trigger?: string): Promise<ReloadResult>;
}

/** Settings that weaken security, and an upstream URL that cannot work, are said once, loudly, at start. */
export function warnUnsafe(config: Config, log: Logger): void {
  checkUpstreamAtStart(config.upstream, log);
  if (config.upstreamInsecureSkipVerify) {
    log.warn({ upstream: config.upstream }, '--upstream-insecure-skip-verify: the upstream\'s TLS certificate is NOT verified; anyone on the network path can read and change the traffic');
  }
}

/** The metrics side (its thread, collectors and listener); resolves once it listens. */
export async function startMetrics(config: Config): Promise<{ metrics: MetricsWorker; metricsPort: number }> {
  const metrics = new MetricsWorker(config);
  try {
    return { metrics, metricsPort: await metrics.ready };
  } catch (err) {
    await metrics.close().catch(() => undefined);
    throw err;
  }
}

/** Listens on the proxy address; resolves to the bound port. */
export async function listenProxy(app: App, config: Config, port: number): Promise<number> {
  await listenGate(); // test hook (lib/test-hooks.ts)
  try {
    await new Promise<void>((resolve, reject) => {
      app.server.once('error', reject);
      // A deep accept queue: bursts of new connections must wait, not be reset (the kernel caps it at somaxconn).
      app.server.listen({ host: config.listen.host, port, backlog: 8192 }, () => {
        app.server.off('error', reject);
        resolve();
      });
    });
  } catch (err) {
    throw new Error(`--listen ${config.listen.host}:${port}: cannot listen: ${(err as Error).message}`, { cause: err });
  }
  return (app.server.address() as AddressInfo).port;
}

/** Stops accepting and waits for in-flight streams, cutting what is left at --shutdown-timeout. */
export async function drainProxy(app: App, config: Config, log: Logger): Promise<void> {
  const deadline = setTimeout(() => {
    log.warn('shutdown timeout reached; closing remaining streams');
    app.server.closeAllConnections();
  }, config.shutdownTimeout * 1000);
  // Connections that finish their last stream while we drain go idle: close them too.
  const sweep = setInterval(() => app.server.closeIdleConnections(), 100);
  const closed = app.close();
  log.debug('proxy listener closed; waiting for the requests in flight');
  await closed;
  clearInterval(sweep);
  clearTimeout(deadline);
}
