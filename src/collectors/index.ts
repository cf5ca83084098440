import type { CollectorEntry } from './types.js';
import { GPU_COLLECTOR } from './gpu/index.js';
import { engineEntry } from './engine/collector.js';
import { hostEntry } from './host/collector.js';
import { GPU_ENGINE_COLLECTOR } from './gpu/engine-join.js';

/**
 * The collector table: adding a collector is one file, one row here, one fixture, one test.
 */
export const COLLECTORS: readonly CollectorEntry[] = [
  GPU_COLLECTOR,
  GPU_ENGINE_COLLECTOR,
  engineEntry(),
  hostEntry(),
];
