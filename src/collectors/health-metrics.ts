/** The health the collector runner reports for every collector (runner.ts), whatever it collects; `upstream` only on the engine collector's (one per upstream). */
import type { MetricDef } from '../lib/metric-def.js';

export const COLLECTOR_HEALTH_METRICS = [
  { name: 'infermeter_collector_up', type: 'gauge', unit: '1', labels: ['collector', 'upstream'], source: 'collector',
    help: '1 when the collector\'s last run succeeded, else 0.' },
  { name: 'infermeter_collector_last_success_timestamp_seconds', type: 'gauge', unit: 's', labels: ['collector', 'upstream'], source: 'collector',
    help: 'Unix time of the collector\'s last successful run.' },
  { name: 'infermeter_collector_duration_seconds', type: 'gauge', unit: 's', labels: ['collector', 'upstream'], source: 'collector',
    help: 'Duration of the collector\'s last run.' },
  { name: 'infermeter_collector_errors_total', type: 'counter', unit: '{error}', labels: ['collector', 'upstream', 'kind'], source: 'collector',
    help: 'Collector failures by kind.' },
] as const satisfies readonly MetricDef[];
