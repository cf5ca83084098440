/**
 * Starting and stopping the daemon: the metrics side, then the proxy listener (in this
 * process, or in `--workers` cluster workers: cluster/primary.ts); on SIGTERM/SIGINT stop
 * accepting, let in-flight streams finish up to --shutdown-timeout, then close everything.
 * The metrics side hears of each step (listening, draining) so /readyz tells the truth;
 * SIGHUP re-reads the config file (config-reload.ts).
 */
import type { Logger } from 'pino';
import { buildApp } from '../proxy/app.js';
import type { Config } from '../config.js';
import { drainProxy, listenProxy, startMetrics, warnUnsafe, type Running } from './start.js';
import { setLogLevel } from '../lib/log.js';
import { installBlockSwitch } from '../lib/test-hooks.js';

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
  // Several upstreams: the proxy routes by the model lists the metrics side reads (metrics/models.ts).
  metrics.onModelLists((lists) => app.upstreams.update(lists));
  installBlockSwitch();
  let proxyPort: number;
  try {
    // Several upstreams: route by their model lists from the first request on (at most 2 s; at once with one).
    await app.ready;
    proxyPort = await listenProxy(app, config, config.listen.port);
  } catch (err) {
    sink.stop();
    await metrics.close();
    throw err;
  }
  // Only now may /readyz say yes: a client sent here before this moment would be refused.
  metrics.post({ type: 'proxy-state', source: 0, state: 'listening' });
  log.info({ proxy: `${config.listen.host}:${proxyPort}`, metrics: `${config.metricsListen.host}:${metricsPort}`, upstream: config.upstream, engine: config.engine, workers: 1, ...(config.upstreams.length > 1 ? { upstreams: config.upstreams.map((u) => u.name) } : {}) }, 'infermeter ready');

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
