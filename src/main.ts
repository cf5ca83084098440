/**
 * Starting and stopping the daemon: the metrics side, then the proxy listener (in this
 * process, or in `--workers` cluster workers: cluster/primary.ts); on SIGTERM/SIGINT stop
 * accepting, let in-flight streams finish up to --shutdown-timeout, then close everything.
 * The metrics side hears of each step (listening, draining) so /readyz tells the truth;
 * SIGHUP re-reads the config file (config-reload.ts).
 */
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { buildApp, type App } from './app.js';
import type { Config } from './config.js';
import { MetricsWorker } from './metrics/sink.js';
import type { ReloadResult } from './metrics/side.js';
import { setLogLevel } from './lib/log.js';
import { installBlockSwitch, listenDelayMs } from './lib/test-hooks.js';

export interface Running {
  proxyPort: number;
  metricsPort: number;
  /** Graceful: in-flight streams get up to --shutdown-timeout. */
  close(): Promise<void>;
  /** Re-reads the config file (SIGHUP); a bad file keeps the running config. */
  reload(trigger?: string): Promise<ReloadResult>;
}

export async function startInfermeter(config: Config, log: Logger): Promise<Running> {
  if (config.workers > 1) {
    const { startCluster } = await import('./cluster/primary.js');
    return startCluster(config, log);
  }
  warnUnsafe(config, log);
  const { metrics, metricsPort } = await startMetrics(config);
  // A reload, however asked for, reaches this thread's logger too.
  metrics.onReloaded = (r) => {
    if (r.ok) setLogLevel(log, r.live.logLevel);
  };
  const sink = metrics.sink();
  const app = buildApp(config, sink, log);
  installBlockSwitch();
  let proxyPort: number;
  try {
    proxyPort = await listenProxy(app, config, config.listen.port);
  } catch (err) {
    sink.stop();
    await metrics.close();
    throw err;
  }
  // Only now may /readyz say yes: a client sent here before this moment would be refused.
  metrics.post({ type: 'proxy-state', source: 0, state: 'listening' });
  log.info({ proxy: `${config.listen.host}:${proxyPort}`, metrics: `${config.metricsListen.host}:${metricsPort}`, upstream: config.upstream, engine: config.engine, workers: 1 }, 'infermeter ready');

  let closing: Promise<void> | null = null;
  return {
    proxyPort,
    metricsPort,
    close() {
      closing ??= (async () => {
        // Out of the load balancer's rotation first, then drain.
        metrics.post({ type: 'proxy-state', source: 0, state: 'draining' });
        await drainProxy(app, config, log);
        sink.stop();
        await metrics.close();
      })();
      return closing;
    },
    reload: (trigger = 'reload') => metrics.reload(trigger),
  };
}

/** Settings that weaken security are said once, loudly, at start. */
export function warnUnsafe(config: Config, log: Logger): void {
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
  const delay = listenDelayMs();
  if (delay > 0) await new Promise((r) => setTimeout(r, delay)); // test hook (lib/test-hooks.ts)
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
  // As Prometheus, Alertmanager and nginx: SIGHUP re-reads the config file (systemctl reload).
  process.on('SIGHUP', () => {
    if (!signalled) void running.reload('SIGHUP');
  });
}
