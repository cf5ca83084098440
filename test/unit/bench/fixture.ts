/** A hand-made bench report (no server) for the renderer, schema and compare tests; the schema validator. */
import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { ROOT } from '../../helpers.js';
import { summarizePhase, summarizeResources, type BenchReport, type RequestSample, type StepReport } from '../../../src/bench/report.js';
import { DEFINITIONS } from '../../../src/bench/run.js';

export function sample(i: number, over: Partial<RequestSample> = {}): RequestSample {
  const ttft = 0.05 + 0.01 * (i % 5);
  const tpot = 0.02 + 0.001 * (i % 7);
  return { index: i, start: i * 0.1, outcome: 'ok', status: 200, error: null, ttft, tpot, e2e: ttft + tpot * 127, outputTokens: 128, promptTokens: 512, chunks: 128, ...over };
}

function step(load: number, scale: number, startedAt: number): StepReport {
  const requests: RequestSample[] = Array.from({ length: 20 }, (_, i) => {
    const s = sample(i);
    return { ...s, ttft: s.ttft! * scale, tpot: s.tpot! * (1 + (scale - 1) / 4), e2e: s.e2e * scale };
  });
  requests[3] = { ...requests[3]!, outcome: 'upstream_error', status: 500, error: 'http 500', ttft: null, tpot: null, outputTokens: 0 };
  const gpu = [0, 1, 2].map((k) => ({ t: startedAt + k, gpu: 0, utilization: 0.2 * scale + 0.05 * k, memoryUtilization: 0.1 * scale, memoryUsedBytes: 40 * 1024 ** 3, powerWatts: 200 + 50 * scale }));
  const engine = [0, 1, 2].map((k) => ({ t: startedAt + k, kvCacheUsage: Math.min(1, 0.1 * scale + 0.01 * k), requestsRunning: load, requestsWaiting: scale > 2 ? scale : 0, prefixCacheQueries: 1000 * k, prefixCacheHits: 100 * k }));
  return {
    mode: 'rate', load, arrivals: 'poisson', durationSeconds: 10, startedAt,
    summary: summarizePhase(requests, 10, { ttft: 0.1, tpot: 0.025 }, 128),
    resources: summarizeResources(gpu, engine), requests,
  };
}

export function fakeReport(opts: { charts?: boolean; scale?: number } = {}): BenchReport {
  const k = opts.scale ?? 1;
  const single = Array.from({ length: 10 }, (_, i) => sample(i));
  const steps = opts.charts === false ? [] : [step(1, 1 * k, 10), step(4, 1.5 * k, 30), step(8, 2.5 * k, 50)];
  return {
    schemaVersion: 1, partial: false, partialReason: null,
    environment: {
      date: '2026-11-29T12:00:00.000Z', command: ['infermeter', 'bench', '--target', 'http://127.0.0.1:8000'], infermeterVersion: '0.1.0',
      host: { cpuModel: 'Test CPU', cpus: 2, memoryBytes: 1, platform: 'linux', release: '6', arch: 'x64', node: 'v20' },
      gpu: { available: true, error: null, count: 1, models: ['NVIDIA H100 80GB HBM3'], driverVersion: '550.127.05', cudaVersion: '12.4', gpus: [{ index: 0, name: 'NVIDIA H100 80GB HBM3', memoryTotalBytes: 80 * 1024 ** 3 }] },
      engine: { kind: 'vllm', version: '0.10.1', models: ['m'], versionError: null, modelsError: null },
    },
    config: { target: 'http://127.0.0.1:8000', model: 'm', route: 'completion', inputTokens: 512, outputTokens: 128, prompts: 'synthetic', tokenEstimate: '4 characters per token', ignoreEos: true, seed: 42, slo: { ttft: 0.1, tpot: 0.025 } },
    definitions: DEFINITIONS,
    warmup: { requests: 2, ok: 2 },
    singleStream: { startedAt: 2, summary: summarizePhase(single, 5, { ttft: 0.1, tpot: 0.025 }, 128), resources: summarizeResources([], []), requests: single },
    steps,
    monitor: {
      intervalSeconds: 1, gpuError: null, engineError: null,
      gpu: steps.flatMap((s) => [0, 1, 2].map((j) => ({ t: s.startedAt + j, gpu: 0, utilization: 0.5, memoryUtilization: 0.2, memoryUsedBytes: 1e9, powerWatts: 300 }))),
      engine: steps.flatMap((s) => [0, 1, 2].map((j) => ({ t: s.startedAt + j, kvCacheUsage: 0.3, requestsRunning: s.load, requestsWaiting: 0, prefixCacheQueries: null, prefixCacheHits: null }))),
    },
  };
}

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

/** Validates against the schema shipped in the repo (strict ajv: the schema itself is checked too). */
export function reportValidator() {
  const ajv = new Ajv({ allErrors: true, strict: true });
  addFormats(ajv);
  return ajv.compile(JSON.parse(readFileSync(`${ROOT}schemas/bench-report.schema.json`, 'utf8')));
}
