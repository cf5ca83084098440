import type { MetricDef } from '../../metrics/catalog.js';

// Placeholder: the collector's data table fills this in.
export const HOST_METRICS: readonly MetricDef[] = [];
