/**
 * What the flag table resolves into. Each room declares the options it reads (ProxyOptions,
 * CollectorOptions, SideOptions, ...); Config is those types put together, so the compiler
 * checks that one resolved config feeds every room (docs/architecture.md). Plain data only:
 * the config crosses into the metrics worker by structured clone.
 */
import type { ProxyOptions } from '../proxy/app.js';
import type { TenantSource } from '../proxy/tenant.js';
import type { CollectorOptions } from '../collectors/types.js';
import type { ExemplarOptions, NativeHistogramOptions, RequestMetricsSettings } from '../metrics/prometheus.js';
import type { BottleneckSettings } from '../metrics/bottleneck/capacity.js';
import type { OtlpConfigOptions } from '../exporters/otlp/otlp.js';
import type { TrailOptions } from '../exporters/trace/trail.js';
import type { SideOptions } from '../side/options.js';
import type { TlsFiles } from '../lib/tls.js';
import type { LogLevel } from '../lib/log.js';

export interface Config
  extends ProxyOptions, CollectorOptions, SideOptions, TlsFiles, OtlpConfigOptions, TrailOptions, ExemplarOptions,
    NativeHistogramOptions, RequestMetricsSettings, BottleneckSettings {
  /**
   * The proxy's source names; the metrics side's TenantSettings reads only whether it is
   * `none`, so it declares a plain string (this narrower type satisfies both).
   */
  tenantFrom: TenantSource;
  /** Optional for the request metrics, which default it (true); always resolved here. */
  classicHistograms: boolean;
  /** On SIGTERM, seconds in-flight streams may take to finish (daemon/). */
  shutdownTimeout: number;
  /** Proxy processes: 1 runs the proxy in this process; more run a node:cluster (daemon/cluster/). */
  workers: number;
  logLevel: LogLevel;
  /** Where infermeter keeps what it makes for itself (the tenant salt: lib/state.ts). */
  stateDir: string;
  /** What this config was resolved from, so that a reload (SIGHUP) resolves it again the same way. */
  sources: ConfigSources;
  /** Where each setting's value came from (flag-table keys, configFile, slos, buckets): --print-config. */
  origins: Record<string, SettingSource>;
}

/** Where a setting's value came from, in the order that decides: flag > env > file > default. */
export type SettingSource = 'flag' | 'env' | 'file' | 'default';

/** The command-line values and INFERMETER_* environment a config was resolved from (plain data). */
export interface ConfigSources {
  cli: Record<string, unknown>;
  env: Record<string, string>;
}

/** The settings the flag table fills, one row each; the rest come from the file's sections or are derived. */
export type FlagKey = Exclude<keyof Config, 'buckets' | 'slos' | 'configFile' | 'sources' | 'tracing' | 'origins' | 'upstreams' | 'bottleneckBenchLimit'>;

/**
 * Settings whose final value depends on another setting: their row parses to the key's type
 * or a placeholder that resolution replaces (`auto`: by --engine; '': by --tenant-header).
 */
interface Deferred {
  injectUsage: Config['injectUsage'] | 'auto';
  tenantFrom: Config['tenantFrom'] | '';
}

/** What the row of `K` parses to: exactly Config's type for `K`, but for the deferred settings. */
export type FlagValue<K extends FlagKey> = K extends keyof Deferred ? Deferred[K] : Config[K];

/** Every row's parsed value: the flag table's half of a Config, before resolution completes it. */
export type FlagValues = { [K in FlagKey]: FlagValue<K> };
