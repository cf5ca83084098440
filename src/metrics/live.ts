/**
 * The settings a reload changes without a restart, declared once: the type below, and the key
 * list the compiler derives from it (`LIVE` must name every key of LiveSettings, and no other).
 * daemon/reload.ts picks them out of a re-resolved config and names every other flag that
 * changed as restart-only; the metrics side hands them to each consumer's applyLive.
 *
 * Tenant sources, prompt classes and in-flight bands decide label names and bucket layouts:
 * restart only.
 */
import type { LogLevel } from '../lib/log.js';
import type { SloConfig } from '../slo/config.js';

export interface LiveSettings {
  /** SLO thresholds: the exact good/bad counters, prompt classes included. */
  slos: SloConfig;
  /** The model label allowlist (empty: the upstreams' lists). */
  models: string[];
  modelsRefresh: number;
  logLevel: LogLevel;
  tenantLimit: number;
}

const LIVE: Record<keyof LiveSettings, true> = { slos: true, models: true, modelsRefresh: true, logLevel: true, tenantLimit: true };

export const LIVE_KEYS = Object.keys(LIVE) as readonly (keyof LiveSettings)[];

/** The live settings of a config (any object that has them: Config, SideOptions). */
export function liveOf(config: LiveSettings): LiveSettings {
  return Object.fromEntries(LIVE_KEYS.map((k) => [k, config[k]])) as unknown as LiveSettings;
}
