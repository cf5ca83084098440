/**
 * Whether a bench run measured anything: a phase whose requests failed beyond
 * --max-error-rate (default: a phase with no successful request at all) fails the run, so a
 * dead target or a wrong model cannot pass for a benchmark in a script or CI. Each failed
 * phase is named with its error kinds and counts, the cause included (not only in bench.json).
 */
import type { BenchReport, RequestSample } from './report.js';
import { stepLabel } from './format.js';

export interface PhaseVerdict {
  phase: string;
  requests: number;
  ok: number;
  /** "upstream_unreachable 12 (connect ECONNREFUSED 127.0.0.1:1)", most frequent first. */
  errors: string[];
}

/** Error kinds (outcome, then the first message seen for it) and how often each happened. */
export function errorKinds(samples: readonly RequestSample[]): string[] {
  const kinds = new Map<string, { n: number; message: string | null; status: number }>();
  for (const s of samples) {
    if (s.outcome === 'ok') continue;
    const k = kinds.get(s.outcome) ?? { n: 0, message: s.error, status: s.status };
    k.n++;
    kinds.set(s.outcome, k);
  }
  return [...kinds.entries()]
    .sort((a, b) => b[1].n - a[1].n)
    .map(([outcome, k]) => `${outcome} ${k.n}${describe(k.message, k.status)}`);
}

function describe(message: string | null, status: number): string {
  const parts = [status > 0 ? `HTTP ${status}` : '', (message ?? '').slice(0, 160)].filter(Boolean);
  return parts.length ? ` (${parts.join(': ')})` : '';
}

/**
 * The measured phases (single stream, each load step) that failed: error share above
 * maxErrorRate (0–1), or, when it is null, no request ok. Warm-up is not judged.
 */
export function failedPhases(report: BenchReport, maxErrorRate: number | null): PhaseVerdict[] {
  const phases: { phase: string; requests: readonly RequestSample[] }[] = [];
  if (report.singleStream) phases.push({ phase: 'single-stream', requests: report.singleStream.requests });
  for (const [i, st] of report.steps.entries()) phases.push({ phase: `step ${i + 1} (${stepLabel(st)})`, requests: st.requests });
  const out: PhaseVerdict[] = [];
  for (const p of phases) {
    const judged = p.requests.filter((s) => s.outcome !== 'client_abort');
    const ok = judged.filter((s) => s.outcome === 'ok').length;
    const rate = judged.length === 0 ? 0 : (judged.length - ok) / judged.length;
    const failed = maxErrorRate === null ? judged.length > 0 && ok === 0 : rate > maxErrorRate;
    if (failed) out.push({ phase: p.phase, requests: judged.length, ok, errors: errorKinds(p.requests) });
  }
  return out;
}

export function verdictLines(failed: readonly PhaseVerdict[], maxErrorRate: number | null): string[] {
  const rule = maxErrorRate === null ? 'no successful request' : `error rate above --max-error-rate ${maxErrorRate}`;
  return failed.map((f) => `bench: ${f.phase} failed (${rule}): ${f.ok}/${f.requests} ok; errors: ${f.errors.join(', ')}`);
}
