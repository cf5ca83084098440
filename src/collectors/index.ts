import type { CollectorEntry } from './types.js';
import { engineEntry } from './engine/collector.js';
import { hostEntry } from './host/collector.js';

/**
 * The collector table: adding a collector is one file, one row here, one fixture, one test.
 */
export const COLLECTORS: readonly CollectorEntry[] = [
  engineEntry(),
  hostEntry(),
];
