/**
 * The load where an `infermeter bench` run of this server saw the SLO break
 * (--bottleneck-bench): the live `none` verdict then says how far today's load is from it.
 * Read once at startup; a file that is not a bench report is refused naming the flag.
 */

import { readFileSync } from 'node:fs';
import { ConfigError } from '../../lib/errors.js';

/** The flags this room reads (config.ts feeds them through SideOptions). */
export interface BottleneckSettings {
  /** Seconds between evaluations. */
  bottleneckInterval: number;
  /** Seconds of requests and readings each evaluation covers. */
  bottleneckWindow: number;
  /** --bottleneck-bench: a bench.json of this server, and the load where it saw the SLO break (config.ts reads it once). */
  bottleneckBench: string;
  bottleneckBenchLimit: BenchLimit | null;
}

/** A step broke its SLOs when its worst attainment was below this (as bench/analysis.ts). */
const OBJECTIVE = 0.99;

export interface BenchLimit {
  /** Requests per second the first broken step achieved. */
  requestsPerSecond: number;
  /** e.g. "step 3 (8 req/s)". */
  step: string;
  /** That step's mean prompt and output tokens (null: not in the report): headroom calibrates only at the same mix (metrics/headroom/bench.ts). */
  promptTokens: number | null;
  outputTokens: number | null;
  /** The SLO with the worst attainment in that step (null: judged by its analysis, no SLOs), and what its analysis said limited it. */
  slo: string | null;
  kind: string | null;
}

/** --bottleneck-bench's file ('' : none), refused naming the flag when unreadable or not a bench report. */
export function readBenchLimit(path: string): BenchLimit | null {
  if (path === '') return null;
  try {
    return benchLimit(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new ConfigError('--bottleneck-bench', `${path}: ${(err as Error).message}`, { cause: err });
  }
}

interface StepLike {
  mode?: string;
  load?: number;
  summary?: { requestsPerSecond?: number; slo?: Record<string, { attainment?: number | null } | undefined>; promptTokens?: { mean?: number | null }; outputTokens?: { mean?: number | null } };
  analysis?: { kind?: string };
}

/** The first step whose SLOs broke (or, without SLOs, whose analysis named a limit); null if none did. */
export function benchLimit(text: string): BenchLimit | null {
  const doc = JSON.parse(text) as { schemaVersion?: unknown; steps?: unknown };
  if (typeof doc !== 'object' || doc === null || doc.schemaVersion === undefined || !Array.isArray(doc.steps)) throw new Error('not an infermeter bench report (bench.json): no schemaVersion and steps');
  const steps = doc.steps as StepLike[];
  for (const [i, st] of steps.entries()) {
    const judged = Object.entries(st.summary?.slo ?? {}).filter((e): e is [string, { attainment: number }] => typeof e[1]?.attainment === 'number');
    const worst = judged.length ? judged.reduce((a, b) => (b[1].attainment < a[1].attainment ? b : a)) : null;
    const broke = worst ? worst[1].attainment < OBJECTIVE : st.analysis?.kind !== undefined && st.analysis.kind !== 'none';
    const rps = st.summary?.requestsPerSecond;
    if (broke && typeof rps === 'number' && rps > 0) {
      const mean = (d: { mean?: number | null } | undefined) => (typeof d?.mean === 'number' ? d.mean : null);
      return {
        requestsPerSecond: rps, step: `step ${i + 1} (${st.mode === 'concurrency' ? `concurrency ${st.load}` : `${st.load} req/s`})`,
        promptTokens: mean(st.summary?.promptTokens), outputTokens: mean(st.summary?.outputTokens), slo: worst ? worst[0] : null, kind: st.analysis?.kind ?? null,
      };
    }
  }
  return null;
}
