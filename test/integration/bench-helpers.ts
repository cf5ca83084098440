/** Shared by the bench integration tests. */
import type { BenchOptions } from '../../src/bench/run.js';
import { ROOT } from '../helpers.js';

export const FAKE_NVIDIA_SMI = `${ROOT}bin/fake-nvidia-smi`;

export function benchOptions(target: string, over: Partial<BenchOptions> = {}): BenchOptions {
  return {
    target, model: null, route: 'completions', inputTokens: 400, outputTokens: 16, promptsFile: null, warmup: 2, requests: 8,
    qps: [], concurrency: [], durationSeconds: 1.5, arrivals: 'poisson', seed: 7, slo: {}, nvidiaSmi: null, engineMetrics: '',
    engine: null, sampleIntervalMs: 200, command: ['test'], ...over,
  };
}
