/**
 * A reload on the metrics side. It is resolved once, in daemon/reload.ts (where the flag table
 * is), whether SIGHUP or POST /-/reload asked for it; what travels here is the plan: the live
 * settings (metrics/live.ts), the notes about what keeps its value until a restart, and the
 * re-read web config. Applying it fans out: the listener's guard, the model label set, the log
 * level, and each consumer's applyLive. A failed resolution changes nothing and is said here,
 * with the reload gauges.
 */
import type { Logger } from 'pino';
import { setLogLevel } from '../lib/log.js';
import type { WebConfig } from '../lib/web-config.js';
import type { BatchConsumer, Routes } from '../metrics/consumer.js';
import type { LiveSettings } from '../metrics/live.js';
import type { ModelLabels } from '../metrics/models.js';
import type { ReloadMetrics } from '../metrics/reload-metrics.js';

/** What daemon/reload.ts resolved: what to apply, or why the running config stays. */
export type ReloadPlan =
  | {
    ok: true; live: LiveSettings; restartNeeded: string[]; bucketsKept: string[];
    /** The --web.config.file read again (absent when there is none). */
    web?: WebConfig;
  }
  | { ok: false; error: string };

/** What a reload did, for the POST /-/reload answer and for the parent (log level, workers). */
export type ReloadResult = { ok: true; live: LiveSettings; restartNeeded: string[] } | { ok: false; error: string };

export interface ReloadTargets {
  consumers: readonly BatchConsumer[];
  models: ModelLabels;
  /** The listener's guard: new users and TLS files (it names a change of protocol as restart-only). */
  reloadWeb(web: WebConfig, restartNeeded: string[]): void;
  /** The side's own judge reads the SLOs of the live settings. */
  setLive(live: LiveSettings): void;
  gauges: ReloadMetrics;
  log: Logger;
  configFile: string | null;
}

export function applyReload(plan: ReloadPlan, trigger: string, t: ReloadTargets): ReloadResult {
  if (!plan.ok) {
    t.gauges.failed();
    t.log.error({ trigger, err: plan.error }, 'config reload failed; the running config stays');
    return plan;
  }
  const { live, bucketsKept } = plan;
  const restartNeeded = [...plan.restartNeeded];
  if (restartNeeded.length > 0) {
    t.log.warn({ settings: restartNeeded }, 'config reload: these settings differ in the new config but change only on restart; they keep their running values');
  }
  if (bucketsKept.length > 0) {
    t.log.info({ buckets: bucketsKept }, 'config reload: histogram bucket boundaries stay as they are until restart (existing series keep their le set); the SLO counters use the new thresholds now');
  }
  if (plan.web) t.reloadWeb(plan.web, restartNeeded);
  t.setLive(live);
  for (const c of t.consumers) c.applyLive?.(live);
  t.models.reconfigure(live.models, live.modelsRefresh);
  setLogLevel(t.log, live.logLevel);
  t.gauges.succeeded();
  t.log.info({ trigger, file: t.configFile }, 'config reloaded');
  return { ok: true, live, restartNeeded };
}

/**
 * POST (or PUT) /-/reload, as Prometheus: the same as SIGHUP, answered once the reload is
 * applied. `ask` hands the request to the process that resolves it (daemon/metrics-thread.ts).
 */
export function reloadRoutes(enabled: boolean, ask: (trigger: string) => Promise<ReloadResult>): Routes {
  return (app) => {
    app.route({
      method: ['POST', 'PUT'],
      url: '/-/reload',
      handler: async (_req, reply) => {
        if (!enabled) return reply.code(403).header('content-type', 'text/plain').send('POST /-/reload is off; start infermeter with --web.enable-lifecycle (or send SIGHUP)\n');
        const r = await ask('POST /-/reload');
        if (!r.ok) return reply.code(500).header('content-type', 'text/plain').send(`config reload failed; the running config stays: ${r.error}\n`);
        const note = r.restartNeeded.length > 0 ? ` (needs a restart to change: ${r.restartNeeded.join(', ')})` : '';
        return reply.code(200).header('content-type', 'text/plain').send(`config reloaded${note}\n`);
      },
    });
  };
}
