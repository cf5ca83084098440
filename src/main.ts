/**
 * Starting and stopping the daemon: the metrics worker, then the proxy listener; on
 * SIGTERM/SIGINT stop accepting, let in-flight streams finish up to --shutdown-timeout,
 * then close everything.
 */
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { buildApp } from './app.js';
import type { Config } from './config.js';
import { MetricsWorker } from './metrics/sink.js';

export interface Running {
  proxyPort: number;
  metricsPort: number;
  /** Graceful: in-flight streams get up to --shutdown-timeout. */
  close(): Promise<void>;
}

export async function startInfermeter(config: Config, log: Logger): Promise<Running> {
  const metrics = new MetricsWorker(config);
  let metricsPort: number;
  try {
    metricsPort = await metrics.ready;
  } catch (err) {
    await metrics.close().catch(() => undefined);
    throw err;
  }
  const sink = metrics.sink();
  const app = buildApp(config, sink, log);
  try {
    // A deep accept queue: bursts of new connections must wait, not be reset (the kernel caps it at somaxconn).
    await new Promise<void>((resolve, reject) => {
      app.server.once('error', reject);
      app.server.listen({ host: config.listen.host, port: config.listen.port, backlog: 8192 }, () => {
        app.server.off('error', reject);
        resolve();
      });
    });
  } catch (err) {
    sink.stop();
    await metrics.close();
    throw new Error(`--listen ${config.listen.host}:${config.listen.port}: cannot listen: ${(err as Error).message}`, { cause: err });
  }
  const proxyPort = (app.server.address() as AddressInfo).port;
  log.info({ proxy: `${config.listen.host}:${proxyPort}`, metrics: `${config.metricsListen.host}:${metricsPort}`, upstream: config.upstream, engine: config.engine }, 'infermeter ready');

  let closing: Promise<void> | null = null;
  return {
    proxyPort,
    metricsPort,
    close() {
      closing ??= (async () => {
        const deadline = setTimeout(() => {
          log.warn('shutdown timeout reached; closing remaining streams');
          app.server.closeAllConnections();
        }, config.shutdownTimeout * 1000);
        // Connections that finish their last stream while we drain go idle: close them too.
        const sweep = setInterval(() => app.server.closeIdleConnections(), 100);
        await app.close();
        clearInterval(sweep);
        clearTimeout(deadline);
        sink.stop();
        await metrics.close();
      })();
      return closing;
    },
  };
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
