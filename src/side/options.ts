/**
 * What the metrics side reads of the configuration: its own settings and those of every
 * collector and consumer it runs (config.ts's Config carries them all; docs/architecture.md).
 */
import type { CollectorOptions } from '../collectors/types.js';
import type { HostPort } from '../lib/parse.js';
import type { TlsFiles } from '../lib/tls.js';
import type { OtlpConfigOptions } from '../exporters/otlp/otlp.js';
import type { TrailOptions } from '../exporters/trace/trail.js';
import type { ExemplarOptions, NativeHistogramOptions, RequestMetricsSettings } from '../metrics/prometheus.js';
import type { BottleneckSettings } from '../metrics/bottleneck/live.js';
import type { HeadroomSettings } from '../metrics/headroom/live.js';
import type { LiveSettings } from '../metrics/live.js';
import type { PromptOptions } from '../metrics/prompt/options.js';
import type { WorkloadTraceOptions } from '../exporters/workload-trace/options.js';
import type { EnergySettings } from '../metrics/energy/settings.js';
import type { PrefixCacheSettings } from '../metrics/prefix/live.js';

export interface SideOptions
  extends LiveSettings, CollectorOptions, TlsFiles, OtlpConfigOptions, TrailOptions, ExemplarOptions, NativeHistogramOptions, RequestMetricsSettings, BottleneckSettings,
    HeadroomSettings, PromptOptions, WorkloadTraceOptions, EnergySettings, PrefixCacheSettings {
  metricsListen: HostPort;
  livenessTimeout: number;
  readyRequiresUpstream: boolean;
  webEnableLifecycle: boolean;
  ui: boolean;
  configFile: string | null;
}
