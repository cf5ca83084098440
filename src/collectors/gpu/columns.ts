import type { MetricDef } from '../../metrics/catalog.js';

// Placeholder: the collector's data table fills this in.
export const GPU_METRICS: readonly MetricDef[] = [];
