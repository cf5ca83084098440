/** infermeter_config_last_reload_{successful,success_timestamp_seconds}: set at start, moved by each reload. */
import type { Registry, Gauge } from 'prom-client';
import { CONFIG_RELOAD_METRICS } from './catalog.js';
import { gauge } from '../lib/metric-def.js';

export class ReloadMetrics {
  private readonly successful: Gauge;
  private readonly at: Gauge;

  constructor(registry: Registry) {
    const [successful, at] = CONFIG_RELOAD_METRICS;
    this.successful = gauge(registry, successful);
    this.at = gauge(registry, at);
    this.succeeded();
  }

  succeeded(): void {
    this.successful.set(1);
    this.at.set(Date.now() / 1000);
  }

  failed(): void {
    this.successful.set(0);
  }
}
