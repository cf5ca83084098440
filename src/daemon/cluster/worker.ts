/**
 * A `--workers` proxy process: the same proxy as a single process (app.ts), whose record
 * batches go to the cluster primary over IPC instead of to a metrics thread of its own.
 * The primary owns the metrics side, the collectors and the model lists (it sends them here,
 * for routing); a worker only timestamps, frames, counts and forwards.
 */
import cluster from 'node:cluster';
import { buildApp } from '../../proxy/app.js';
import type { Config } from '../../config.js';
import { createLogger, setLogLevel } from '../../lib/log.js';
import { installBlockSwitch } from '../../lib/test-hooks.js';
import { drainProxy, listenProxy } from '../start.js';
import { BatchingSink } from '../../record/sink.js';
import { CONFIG_ENV, PORT_ENV, type FromProxyWorker, type ToProxyWorker } from './messages.js';

const config = JSON.parse(process.env[CONFIG_ENV] ?? 'null') as Config | null;
if (!config || !cluster.isWorker || !process.send) {
  process.stderr.write('infermeter: cluster/worker.js runs only as a worker forked by infermeter --workers\n');
  process.exit(2);
}
const id = cluster.worker!.id;
const log = createLogger(config.logLevel).child({ worker: id });
/** Settles once the last message sent is on the channel (or the channel is gone). */
let lastSent: Promise<void> = Promise.resolve();
const send = (msg: FromProxyWorker): void => {
  if (!process.connected) return;
  lastSent = new Promise((resolve) => process.send!(msg, undefined, undefined, () => resolve()));
};
const sink = new BatchingSink(id, (batch) => send({ type: 'batch', batch }), (sample) => send({ type: 'loop', sample }));
const app = buildApp(config, sink, log);

let draining = false;
/** Whether the listener is up: a worker whose listen failed has nothing to drain (and its server cannot be closed). */
let listening = false;
/** Drains, hands the last batch over, then exits. Idempotent: the primary and a signal may both ask. */
function drain(reason: string): void {
  if (draining) return;
  draining = true;
  log.debug({ reason }, 'worker draining');
  void (listening ? drainProxy(app, config!, log) : Promise.resolve()).then(() => {
    sink.stop();
    return lastSent;
  }).then(() => process.exit(0));
}

process.on('message', (msg: ToProxyWorker) => {
  if (msg.type === 'drain') drain('primary');
  else if (msg.type === 'reload') setLogLevel(log, msg.logLevel);
  else if (msg.type === 'models') app.upstreams.update(msg.lists);
});
send({ type: 'started' });
// SIGHUP is the primary's to act on (it re-reads the config and tells every worker); a
// worker must not die of it when `kill -HUP` reaches the whole process group.
process.on('SIGHUP', () => undefined);
installBlockSwitch();
// The primary is gone (killed): nobody counts our records any more; finish what is in flight and go.
process.on('disconnect', () => drain('primary gone'));
// Ctrl-C reaches the whole process group, and systemd's default KillMode signals every process:
// drain as the primary will ask anyway; a second signal ends at once, as it does for the primary.
let signals = 0;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    if (++signals > 1) process.exit(1);
    drain(signal);
  });
}
process.on('uncaughtException', (err) => {
  log.fatal({ err: err.message }, 'proxy worker crashed');
  // What finished before the crash still counts; what was in flight becomes worker_lost.
  sink.flush();
  process.exitCode = 1;
  setImmediate(() => process.exit(1));
});

app.ready.then(() => listenProxy(app, config!, Number(process.env[PORT_ENV] ?? config!.listen.port))).then(
  (port) => {
    listening = true;
    send({ type: 'listening', port });
  },
  (err: Error) => {
    send({ type: 'fatal', message: err.message });
    void lastSent.then(() => process.exit(1));
  },
);
