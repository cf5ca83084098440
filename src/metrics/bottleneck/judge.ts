/**
 * The evaluator: rules.ts over one signals snapshot, pure. `classify` finds the first row
 * that holds (the current kind's row at its exit thresholds); `BottleneckJudge` adds the
 * second half of the hysteresis: a different kind replaces the current one only after it has
 * won `confirm` evaluations in a row, so a regime that flips every few seconds does not flip
 * the verdict with it.
 */
import { ADVICE_ENGINES, FALLBACK_TARGETS, NONE_ADVICE, NONE_LATENCY, RULES, ENGINE_METRICS_ADVICE, ENGINE_SIGNALS, GPU_ADVICE, type AdviceEngine, type BottleneckKind, type Condition, type Rule } from './rules.js';
import { SIGNALS, type SignalName, type Signals } from './signals.js';

export interface EvidenceItem {
  signal: SignalName;
  /** null: not measured (an optional condition's signal, or a missing one). */
  value: number | null;
  unit: string;
  /** "30s" (the signal window), "now" or "since start". */
  window: string;
  /** The threshold the verdict used, e.g. ">= 0.9"; absent for context figures. */
  threshold?: string;
  /** Where the value came from when not the preferred source. */
  basis?: string;
}

export interface AdviceItem {
  engine: AdviceEngine;
  text: string;
}

export interface BottleneckVerdict {
  kind: BottleneckKind;
  /** Unix ms when this kind became the verdict. */
  since: number;
  summary: string;
  evidence: EvidenceItem[];
  /** The configured engine's advice first. */
  advice: AdviceItem[];
  /** Signals some rule needed and did not have (why a kind could not be checked). */
  missing: SignalName[];
}

type Holds = 'yes' | 'no' | 'missing';

function holds(cond: Condition, s: Signals, sticky: boolean): Holds {
  const v = s.values[cond.signal];
  if (v === null) return cond.optional ? 'yes' : 'missing';
  const t = sticky ? cond.exit : cond.enter;
  return (cond.op === '>=' ? v >= t : v <= t) ? 'yes' : 'no';
}

interface Match {
  kind: BottleneckKind;
  rule: Rule | null;
  /** The alternative of the rule that held. */
  alternative: readonly Condition[];
  sticky: boolean;
  missing: SignalName[];
}

/** The first row that holds, or none / unknown; `current` is checked at its exit thresholds. */
export function classify(s: Signals, current: BottleneckKind | null): Match {
  const missing = new Set<SignalName>();
  for (const rule of RULES) {
    const sticky = rule.kind === current;
    const ruleMissing: SignalName[] = [];
    for (const alt of rule.when) {
      const results = alt.map((cond) => holds(cond, s, sticky));
      if (results.every((r) => r === 'yes')) return { kind: rule.kind, rule, alternative: alt, sticky, missing: [...missing] };
      // An alternative that failed on a measured signal is settled; one that lacked a signal is not.
      if (!results.includes('no')) ruleMissing.push(...alt.filter((_, i) => results[i] === 'missing').map((cond) => cond.signal));
    }
    for (const m of ruleMissing) missing.add(m);
  }
  const latency = s.values.latencyOverTarget;
  const limit = current === 'none' ? NONE_LATENCY.exit : NONE_LATENCY.enter;
  if (latency !== null && latency < limit) return { kind: 'none', rule: null, alternative: [], sticky: current === 'none', missing: [...missing] };
  if (latency === null) missing.add('latencyOverTarget');
  return { kind: 'unknown', rule: null, alternative: [], sticky: false, missing: [...missing] };
}

function windowOf(signal: SignalName, s: Signals): string {
  const span = SIGNALS[signal].span;
  if (span === 'prefix') return s.prefix ? `${s.prefix.windowSeconds}s` : '--prefix-cache-window';
  return span === 'now' ? 'now' : span === 'life' ? 'since start' : `${s.windowSeconds}s`;
}

function item(signal: SignalName, s: Signals, threshold?: string): EvidenceItem {
  const out: EvidenceItem = { signal, value: round(s.values[signal]), unit: SIGNALS[signal].unit, window: windowOf(signal, s) };
  if (threshold) out.threshold = threshold;
  const basis = s.basis[signal];
  if (basis) out.basis = basis;
  return out;
}

function round(v: number | null): number | null {
  return v === null || !Number.isFinite(v) ? null : Number(v.toPrecision(4));
}

const NONE_EVIDENCE: readonly SignalName[] = ['requestsPerSecond', 'loadVsBenchLimit', 'latencyOverTarget', 'sloAttainment', 'engineWaiting', 'kvCacheUsage'];

function evidenceOf(m: Match, s: Signals): EvidenceItem[] {
  const out: EvidenceItem[] = [];
  const seen = new Set<SignalName>();
  const add = (e: EvidenceItem) => {
    if (seen.has(e.signal)) return;
    seen.add(e.signal);
    out.push(e);
  };
  for (const cond of m.alternative) add(item(cond.signal, s, `${cond.op} ${m.sticky ? cond.exit : cond.enter}`));
  if (m.kind === 'none') add(item('latencyOverTarget', s, `< ${m.sticky ? NONE_LATENCY.exit : NONE_LATENCY.enter}`));
  const extra = m.rule ? m.rule.evidence : m.kind === 'none' ? NONE_EVIDENCE : ['requests', 'latencyOverTarget'] as const;
  // The prefix-cache model's shares are context only where it runs (--prefix-cache): absent, not null, when it is off.
  for (const sig of extra) if (s.values[sig] !== null || (m.kind !== 'none' && SIGNALS[sig].span !== 'prefix')) add(item(sig, s));
  return out;
}

/** Who reads the advice: the daemon (its flags) or bench (its own, fewer). */
export type AdviceReader = keyof typeof GPU_ADVICE;

/** `unknown`: only the signals that are missing, with the flags of whoever reads it. */
function unknownAdvice(missing: readonly SignalName[], e: AdviceEngine, reader: AdviceReader): string {
  const asks = [
    missing.some((s) => (ENGINE_SIGNALS as readonly string[]).includes(s)) ? ENGINE_METRICS_ADVICE[e] : '',
    missing.some((s) => s.startsWith('gpu')) ? GPU_ADVICE[reader] : '',
  ].filter(Boolean);
  return asks.length ? `give infermeter the missing signals: ${asks.join(' and ')}` : 'no rule explains the latency: read the evidence against the rules in docs/bottleneck.md';
}

/**
 * A row with a prefix-caching knob (prefill): the prefix-cache model's verdict, where it has
 * one, says whether that knob pays and which one it is; without the model the daemon says how
 * to find out.
 */
function withPrefix(rule: Rule, e: AdviceEngine, s: Signals, reader: AdviceReader): string {
  const verdict = s.prefix?.verdict;
  if (verdict) return `prefix cache: ${verdict.kind}: ${verdict.advice[e] ?? verdict.summary}; other prefill knobs: ${rule.advice[e]}`;
  const ask = !s.prefix && reader === 'live' ? ' (--prefix-cache true measures whether it would pay)' : '';
  return `${rule.prefixAdvice![e]}${ask}, ${rule.advice[e]}`;
}

function adviceOf(m: Match, s: Signals, reader: AdviceReader): AdviceItem[] {
  const order = [...ADVICE_ENGINES].sort((a, b) => Number(b === s.engine) - Number(a === s.engine));
  const text = (e: AdviceEngine) => {
    if (m.rule) return m.rule.prefixAdvice ? withPrefix(m.rule, e, s, reader) : m.rule.advice[e];
    return m.kind === 'none' ? NONE_ADVICE[e] : unknownAdvice(m.missing, e, reader);
  };
  return order.map((e) => ({ engine: e, text: text(e) }));
}

/** The latency targets that are infermeter's fallbacks (no SLO of that name), in words; '' when every one is an SLO. */
function defaultTargets(s: Signals): string {
  const fallback = [s.basis.ttftOverTarget?.startsWith('no TTFT SLO') ? `TTFT ${FALLBACK_TARGETS.ttft} s` : '', s.basis.tpotOverTarget?.startsWith('no TPOT SLO') ? `TPOT ${FALLBACK_TARGETS.tpot * 1000} ms` : ''].filter(Boolean);
  return fallback.length ? ` (no SLO set: infermeter's default ${fallback.join(' and ')}; set slos: for your own)` : '';
}

function summaryOf(m: Match, s: Signals): string {
  if (m.rule) return m.rule.summary;
  if (m.kind === 'none') return `meeting its latency targets with room${defaultTargets(s)}`;
  return m.missing.length > 0 ? `latency is over target and the signals that would explain it are missing: ${m.missing.join(', ')}` : 'latency is over target and no rule explains it';
}

/** The verdict of one snapshot for a given match. */
export function verdictOf(m: Match, s: Signals, since: number, reader: AdviceReader = 'live'): BottleneckVerdict {
  return { kind: m.kind, since, summary: summaryOf(m, s), evidence: evidenceOf(m, s), advice: adviceOf(m, s, reader), missing: m.missing };
}

/** Classifies one snapshot with no history (bench steps): no hysteresis. */
export function judgeOnce(s: Signals, at: number, reader: AdviceReader = 'live'): BottleneckVerdict {
  return verdictOf(classify(s, null), s, at, reader);
}

export interface JudgeOptions {
  /** Evaluations in a row a new kind must win before it replaces the current one. */
  confirm: number;
}

export const DEFAULT_CONFIRM = 2;

/** One model's verdict over time. */
export class BottleneckJudge {
  private current: BottleneckKind | null = null;
  private since = 0;
  private candidate: BottleneckKind | null = null;
  private wins = 0;
  verdict: BottleneckVerdict | null = null;

  constructor(private readonly opts: JudgeOptions = { confirm: DEFAULT_CONFIRM }) {}

  update(s: Signals, now: number): BottleneckVerdict {
    const m = classify(s, this.current);
    // No request finished in the whole window is a fact, not a noisy reading: idle at once, so a model whose traffic
    // stopped says it as soon as one that never had any. One or two (sparse traffic) still need confirming, and so
    // does an empty window while the engine runs a batch: long requests under load can leave a window in which none
    // finished, and switching at once there flapped a kv_cache verdict to idle and back.
    const busy = (s.values.engineRunning ?? 0) > 0.5;
    if (m.kind === 'idle' && s.values.requests === 0 && !busy && this.current !== 'idle') this.current = null;
    if (this.current === null || m.kind === this.current) {
      if (this.current === null) this.since = now;
      this.current = m.kind;
      this.candidate = null;
      this.wins = 0;
      return (this.verdict = verdictOf(m, s, this.since));
    }
    this.wins = m.kind === this.candidate ? this.wins + 1 : 1;
    this.candidate = m.kind;
    if (this.wins >= this.opts.confirm) {
      this.current = m.kind;
      this.since = now;
      this.candidate = null;
      this.wins = 0;
      return (this.verdict = verdictOf(m, s, now));
    }
    // Not confirmed yet: the current kind stays, with today's figures.
    return (this.verdict = verdictOf(currentMatch(this.current, s), s, this.since));
  }
}

/** The current kind's row re-read at its exit thresholds, for its evidence. */
function currentMatch(kind: BottleneckKind, s: Signals): Match {
  const rule = RULES.find((r) => r.kind === kind) ?? null;
  if (!rule) return { ...classify(s, kind), kind, rule: null, alternative: [], sticky: true };
  const alt = rule.when.find((a) => a.every((cond) => holds(cond, s, true) !== 'no')) ?? rule.when[0]!;
  return { kind, rule, alternative: alt, sticky: true, missing: classify(s, kind).missing };
}
