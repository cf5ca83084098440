/**
 * Starting and stopping the daemon: the metrics side, then the proxy listener (in this
 * process, or in `--workers` cluster workers: cluster/primary.ts); on SIGTERM/SIGINT stop
 * accepting, let in-flight streams finish up to --shutdown-timeout, then close everything.
 */
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { buildApp, type App } from './app.js';
import type { Config } from './config.js';
import { MetricsWorker } from './metrics/sink.js';

export interface Running {
  proxyPort: number;
  metricsPort: number;
  /** Graceful: in-flight streams get up to --shutdown-timeout. */
  close(): Promise<void>;
}

export async function startInfermeter(config: Config, log: Logger): Promise<Running> {
  if (config.workers > 1) {
    const { startCluster } = await import('./cluster/primary.js');
    return startCluster(config, log);
  }
  const { metrics, metricsPort } = await startMetrics(config);
  const sink = metrics.sink();
  const app = buildApp(config, sink, log);
  let proxyPort: number;
  try {
    proxyPort = await listenProxy(app, config, config.listen.port);
  } catch (err) {
    sink.stop();
    await metrics.close();
    throw err;
  }
  log.info({ proxy: `${config.listen.host}:${proxyPort}`, metrics: `${config.metricsListen.host}:${metricsPort}`, upstream: config.upstream, engine: config.engine, workers: 1 }, 'infermeter ready');

  let closing: Promise<void> | null = null;
  return {
    proxyPort,
    metricsPort,
    close() {
      closing ??= (async () => {
        await drainProxy(app, config, log);
        sink.stop();
        await metrics.close();
      })();
      return closing;
    },
  };
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
  await app.close();
  clearInterval(sweep);
  clearTimeout(deadline);
}

/** The `infermeter` proxy command: runs until a signal. */
export async function runDaemon(config: Config, log: Logger): Promise<void> {
  const running = await startInfermeter(config, log);
  let signalled = false;
  const stop = (signal: string) => {
    if (signalled) {
      log.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    signalled = true;
    log.info({ signal, timeoutSeconds: config.shutdownTimeout }, 'shutting down: draining in-flight requests');
    void running.close().then(() => {
      log.info('stopped');
      process.exit(0);
    });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}
