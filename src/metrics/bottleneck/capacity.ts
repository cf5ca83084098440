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
  summary?: { requestsPerSecond?: number; slo?: Record<string, { attainment?: number | null } | undefined> };
  analysis?: { kind?: string };
}

/** The first step whose SLOs broke (or, without SLOs, whose analysis named a limit); null if none did. */
export function benchLimit(text: string): BenchLimit | null {
  const doc = JSON.parse(text) as { schemaVersion?: unknown; steps?: unknown };
  if (typeof doc !== 'object' || doc === null || doc.schemaVersion === undefined || !Array.isArray(doc.steps)) throw new Error('not an infermeter bench report (bench.json): no schemaVersion and steps');
  const steps = doc.steps as StepLike[];
  for (const [i, st] of steps.entries()) {
    const att = Object.values(st.summary?.slo ?? {}).map((x) => x?.attainment).filter((x): x is number => typeof x === 'number');
    const broke = att.length ? Math.min(...att) < OBJECTIVE : st.analysis?.kind !== undefined && st.analysis.kind !== 'none';
    const rps = st.summary?.requestsPerSecond;
    if (broke && typeof rps === 'number' && rps > 0) {
      return { requestsPerSecond: rps, step: `step ${i + 1} (${st.mode === 'concurrency' ? `concurrency ${st.load}` : `${st.load} req/s`})` };
    }
  }
  return null;
}
