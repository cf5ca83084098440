/**
 * `--workers N` (N > 1): N proxy processes share the listener through node:cluster (Node 20
 * has no SO_REUSEPORT), and this process, the primary, is the one metrics side of the
 * machine. Its metrics thread (daemon/metrics-thread.ts, at nice 10) owns the registry, OTLP, the
 * collectors, the model lists and the /metrics listener, exactly as in a single process;
 * the primary's own loop only accepts connections (round-robin to the workers), relays
 * record batches to that thread and keeps the workers running.
 *
 * Exactness: each worker reports its requests started per route with every batch; when a
 * worker dies, the metrics side counts each request it started and never finished once,
 * as `worker_lost`. A dead worker is forked again (backoff up to 5 s) on the same port.
 */
import cluster, { type Worker } from 'node:cluster';
import { createServer, type AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import type { Config } from '../../config.js';
import { startMetrics, warnUnsafe, type Running } from '../start.js';
import { setLogLevel } from '../../lib/log.js';
import { CONFIG_ENV, PORT_ENV, type FromProxyWorker, type ToProxyWorker } from './messages.js';
import type { ModelLists } from '../../record/model-lists.js';

const RESTART_MIN_MS = 100;
const RESTART_MAX_MS = 5000;
/** A worker that lived this long resets the backoff. */
const STABLE_MS = 30_000;
/** Past --shutdown-timeout, how long a worker may take to hand over its last batch and exit. */
const EXIT_GRACE_MS = 5000;

export async function startCluster(config: Config, log: Logger): Promise<Running> {
  warnUnsafe(config, log);
  const { metrics, metricsPort } = await startMetrics(config);
  cluster.setupPrimary({ exec: fileURLToPath(new URL('./worker.js', import.meta.url)), serialization: 'advanced' });
  const env = { [CONFIG_ENV]: JSON.stringify(config) };
  // A reload's log level reaches this process, every worker, and the workers forked later.
  metrics.onReloaded = (r) => {
    if (!r.ok) return;
    setLogLevel(log, r.live.logLevel);
    env[CONFIG_ENV] = JSON.stringify({ ...(JSON.parse(env[CONFIG_ENV]!) as Config), ...r.live });
    for (const w of live) if (w.isConnected()) w.send({ type: 'reload', logLevel: r.live.logLevel } satisfies ToProxyWorker);
  };
  // Workers share one listening handle per requested port. Port 0 is made concrete first, so a
  // worker forked again after every other one died still gets the same port.
  const port = config.listen.port === 0 ? await freePort(config.listen.host) : config.listen.port;
  let shuttingDown = false;
  let backoff = RESTART_MIN_MS;
  const live = new Set<Worker>();
  // Several upstreams: every worker routes by the model lists the metrics side reads (metrics/models.ts).
  let lists: ModelLists | null = null;
  metrics.onModelLists((next) => {
    lists = next;
    for (const w of live) if (w.isConnected()) w.send({ type: 'models', lists: next } satisfies ToProxyWorker);
  });

  /** Forks one worker; resolves with its port once it listens. */
  const fork = (): Promise<number> =>
    new Promise((resolve, reject) => {
      const w = cluster.fork({ ...env, [PORT_ENV]: String(port) });
      const born = Date.now();
      live.add(w);
      let exited = false;
      let disconnected = false;
      w.on('message', (msg: FromProxyWorker) => {
        if (msg.type === 'batch') metrics.post({ type: 'batch', batch: { ...msg.batch, source: w.id } });
        else if (msg.type === 'started') {
          if (lists) w.send({ type: 'models', lists } satisfies ToProxyWorker);
        }
        else if (msg.type === 'loop') metrics.post({ type: 'loop', source: w.id, sample: msg.sample });
        else if (msg.type === 'listening') {
          metrics.post({ type: 'proxy-state', source: w.id, state: 'listening' });
          resolve(msg.port);
        }
        else if (msg.type === 'fatal') reject(new Error(msg.message));
      });
      // Both: 'disconnect' means every message it sent has been read.
      const gone = (code: number | null, signal: string | null) => {
        live.delete(w);
        metrics.post({ type: 'source-exit', source: w.id });
        if (shuttingDown) return;
        reject(new Error(`proxy worker ${w.id} exited (${signal ?? code}) before it listened`));
        if (Date.now() - born > STABLE_MS) backoff = RESTART_MIN_MS;
        log.warn({ worker: w.id, code, signal, restartInMs: backoff }, 'proxy worker died; its in-flight requests are counted as worker_lost; restarting');
        const delay = backoff;
        backoff = Math.min(RESTART_MAX_MS, backoff * 2);
        setTimeout(() => {
          if (!shuttingDown) fork().catch((err: Error) => log.error({ err: err.message }, 'proxy worker restart failed'));
        }, delay).unref();
      };
      let code: number | null = null;
      let signal: string | null = null;
      w.once('exit', (c, s) => {
        exited = true;
        code = c;
        signal = s;
        if (disconnected) gone(code, signal);
      });
      w.once('disconnect', () => {
        disconnected = true;
        if (exited) gone(code, signal);
      });
    });

  /** Stops every worker; `started` false: the start failed, so there is no serving to announce the end of. */
  const stopAll = async (started = true): Promise<void> => {
    shuttingDown = true;
    if (started) metrics.post({ type: 'proxy-state', source: 0, state: 'draining' });
    const exits = [...live].map((w) => new Promise<void>((resolve) => (w.isDead() ? resolve() : w.once('exit', () => resolve()))));
    for (const w of live) if (w.isConnected()) w.send({ type: 'drain' } satisfies ToProxyWorker);
    const kill = setTimeout(() => {
      log.warn('proxy workers did not exit in time; killing them');
      for (const w of live) w.process.kill('SIGKILL');
    }, config.shutdownTimeout * 1000 + EXIT_GRACE_MS);
    await Promise.all(exits);
    clearTimeout(kill);
  };

  try {
    await Promise.all(Array.from({ length: config.workers }, fork));
  } catch (err) {
    await stopAll(false);
    await metrics.close();
    throw err;
  }
  log.info({ proxy: `${config.listen.host}:${port}`, metrics: `${config.metricsListen.host}:${metricsPort}`, upstream: config.upstream, engine: config.engine, workers: config.workers }, 'infermeter ready');

  let closing: Promise<void> | null = null;
  return {
    proxyPort: port,
    metricsPort,
    close() {
      closing ??= (async () => {
        await stopAll();
        await metrics.close();
      })();
      return closing;
    },
    reload: (trigger = 'reload') => metrics.reload(trigger),
  };
}

function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', (err) => reject(new Error(`--listen ${host}:0: cannot listen: ${err.message}`, { cause: err })));
    s.listen(0, host, () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });
}
