/**
 * The bench report's Analysis: each load step's figures turned into the same signals the
 * metrics side judges live (src/metrics/bottleneck/), judged by the same rules (one
 * snapshot, no hysteresis), and written as the case study reads: what limited the step,
 * the numbers that say so, and what to change.
 */
import { judgeOnce, type BottleneckVerdict, type EvidenceItem } from '../metrics/bottleneck/judge.js';
import { FALLBACK_TARGETS } from '../metrics/bottleneck/rules.js';
import { emptySignals, ratio, type Signals } from '../metrics/bottleneck/signals.js';
import type { BenchReport, StepReport } from './report.js';
import { stepLabel } from './format.js';
import { isUpstreamFailure } from '../record/record.js';

/** A step whose every SLO attainment is below this broke its SLOs. */
export const BENCH_OBJECTIVE = 0.99;

export function stepSignals(st: StepReport, r: BenchReport): Signals {
  const s = emptySignals(Math.round(st.summary.seconds), String((r.environment['engine'] as { kind?: string } | undefined)?.kind ?? 'vllm'));
  const v = s.values;
  const sum = st.summary;
  const res = st.resources;
  const slo = (r.config['slo'] ?? {}) as Partial<Record<'ttft' | 'tpot', number>>;
  const failed = Object.entries(sum.errors).filter(([o]) => isUpstreamFailure(o)).reduce((a, [, n]) => a + (n ?? 0), 0);
  const judged = sum.requests - (sum.errors.client_abort ?? 0);
  v.requests = judged;
  v.requestsPerSecond = sum.requestsPerSecond;
  v.failureRatio = judged > 0 ? failed / judged : null;
  v.ttftP50 = sum.ttft.p50;
  v.ttftP99 = sum.ttft.p99;
  v.tpotP50 = sum.tpot.p50;
  v.ttftOverTarget = ratio(sum.ttft.p99, slo.ttft ?? FALLBACK_TARGETS.ttft);
  v.tpotOverTarget = ratio(sum.tpot.p99, slo.tpot ?? FALLBACK_TARGETS.tpot);
  if (slo.ttft === undefined) s.basis.ttftOverTarget = `no --slo ttft: fallback target ${FALLBACK_TARGETS.ttft} s`;
  if (slo.tpot === undefined) s.basis.tpotOverTarget = `no --slo tpot: fallback target ${FALLBACK_TARGETS.tpot} s`;
  const over = [v.ttftOverTarget, v.tpotOverTarget].filter((x): x is number => x !== null);
  v.latencyOverTarget = over.length ? Math.max(...over) : null;
  v.tpotFloor = r.singleStream?.summary.tpot.p50 ?? null;
  if (v.tpotFloor !== null) s.basis.tpotFloor = 'the single-stream TPOT median';
  v.tpotGrowth = ratio(v.tpotP50, v.tpotFloor);
  const att = Object.values(sum.slo).map((x) => x?.attainment).filter((x): x is number => x !== null && x !== undefined);
  v.sloAttainment = att.length ? Math.min(...att) : null;
  v.engineWaiting = res.requestsWaiting.mean;
  v.engineRunning = res.requestsRunning.mean;
  v.kvCacheUsage = res.kvCacheUsage.mean;
  v.kvCacheUsageMax = res.kvCacheUsage.max;
  v.preemptionsPerSecond = res.preemptionsPerSecond ?? null;
  v.queueTimeMean = res.queueTimeMean ?? null;
  const share = (x: number | null) => (x === null || sum.ttft.mean === null || !(sum.ttft.mean > 0) ? null : Math.min(1, x / sum.ttft.mean));
  v.queueShare = share(v.queueTimeMean);
  v.prefillShare = share(res.prefillTimeMean ?? null);
  if (v.prefillShare === null && v.queueShare !== null) {
    v.prefillShare = 1 - v.queueShare;
    s.basis.prefillShare = 'no engine prefill histogram: 1 - queueShare';
  }
  v.gpuUtilization = res.gpuUtilization.mean;
  v.gpuPowerViolation = res.gpuPowerViolation ?? null;
  v.gpuThermalViolation = res.gpuThermalViolation ?? null;
  // bench talks to the server itself: no proxy of infermeter's is in the path.
  v.proxyLoopDelayP99 = 0;
  v.proxyLagShare = 0;
  s.basis.proxyLoopDelayP99 = 'bench sends to the server directly';
  return s;
}

/** Judges every step (in place) and returns the verdicts. */
export function analyzeSteps(r: BenchReport): BottleneckVerdict[] {
  const at = Date.parse(String(r.environment['date'])) || 0;
  return r.steps.map((st) => (st.analysis = judgeOnce(stepSignals(st, r), at, 'bench')));
}

function fmt(e: EvidenceItem): string {
  const v = e.value;
  if (v === null) return `${e.signal} not measured`;
  const n = e.unit === 's' ? (v < 1 ? `${(v * 1000).toFixed(1)} ms` : `${v.toFixed(2)} s`) : e.unit === 'ratio' ? `${(v * 100).toFixed(v < 0.1 ? 1 : 0)} %` : `${Number(v.toPrecision(3))} ${e.unit}`;
  return `${e.signal} ${n}${e.threshold ? ` (rule: ${e.threshold})` : ''}${e.basis ? ` [${e.basis}]` : ''}`;
}

/** A rate step that sent less than this share of its offered rate under-delivered. */
const DELIVERED = 0.9;

/** A rate step's note when it sent less than it offered: its figures then describe a lighter load. */
function underDelivered(st: StepReport): string {
  if (st.mode !== 'rate' || st.durationSeconds <= 0) return '';
  const sent = st.summary.requests / st.durationSeconds;
  if (sent >= DELIVERED * st.load) return '';
  return ` The step under-delivered: it sent ${st.summary.requests} requests in ${st.durationSeconds} s (${sent.toFixed(2)} req/s) of the ${st.load} req/s offered, so its figures describe a lighter load than its label.`;
}

/** Did the step miss its SLOs (or, without SLOs, its latency fallback targets)? */
function broke(st: StepReport): boolean {
  const worst = worstAttainment(st);
  if (worst !== null) return worst < BENCH_OBJECTIVE;
  return st.analysis !== undefined && st.analysis.kind !== 'none';
}

/** The "## Analysis" section of the Markdown report (empty without steps). */
export function renderAnalysis(r: BenchReport): string[] {
  if (r.steps.length === 0) return [];
  const out = ['## Analysis', ''];
  const firstBroken = r.steps.find(broke);
  for (const st of r.steps) {
    const a = st.analysis;
    if (!a) continue;
    const figures = a.evidence.slice(0, 5).map(fmt).join(', ');
    let line = `- **${stepLabel(st)}: ${a.kind}**. ${capital(a.summary)}: ${figures}.`;
    if (a.kind === 'none' && broke(st)) {
      line += ` Yet the SLOs were missed (worst attainment ${pctOf(worstAttainment(st))}) with no resource limit showing: read the failures and the slowest requests.`;
    } else if (a.kind === 'none') {
      line += firstBroken
        ? ` Room: ${st.summary.requestsPerSecond.toFixed(2)} req/s is ${Math.round((100 * st.summary.requestsPerSecond) / Math.max(1e-9, firstBroken.summary.requestsPerSecond))} % of the ${firstBroken.summary.requestsPerSecond.toFixed(2)} req/s where the SLO broke (${stepLabel(firstBroken)}).`
        : ' No step of this run broke the SLO: the limit is beyond the highest load tried.';
    } else {
      line += ` Change: ${a.advice[0]!.text} (${a.advice[0]!.engine}).`;
    }
    out.push(line + underDelivered(st));
  }
  out.push('', 'Verdicts follow the rules of docs/bottleneck.md, the same table that judges `infermeter_bottleneck` live; advice for the other engines is in bench.json (`steps[].analysis.advice`).', '');
  return out;
}

function worstAttainment(st: StepReport): number | null {
  const att = Object.values(st.summary.slo).map((x) => x?.attainment).filter((x): x is number => x !== null && x !== undefined);
  return att.length ? Math.min(...att) : null;
}

function pctOf(v: number | null): string {
  return v === null ? '-' : `${(v * 100).toFixed(1)} %`;
}

function capital(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}
