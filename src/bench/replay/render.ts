/** The replay's section of bench.md (and so of bench.html): the recorded run beside the replayed one; its charts in bench.html. */
import { DASH, msText, num, pct } from '../format.js';
import { BENCH_SLOS, percentile, type Distribution } from '../stats.js';
import type { RequestSample, StepReport } from '../report.js';
import { COLORS, lineChart } from '../svg.js';
import { bucketOf, niceBucket } from './stats.js';
import type { ReplayReport, ReplaySide } from './types.js';

/** Hits beyond what the trace's prefixes allow by more than this were cached before the replay began. */
const STALE_CACHE = 0.1;

export function renderReplay(r: ReplayReport): string[] {
  const out: string[] = [`## Replay: recorded beside replayed (×${r.speed})`, ''];
  const rec = r.recorded;
  const rep = r.replayed;
  const trio = (d: Distribution, f: (v: number | null) => string) => `${f(d.p50)} / ${f(d.p95)} / ${f(d.p99)}`;
  const ms = (digits: number) => (v: number | null) => msText(v, digits);
  const tok = (v: number | null) => num(v, 0);
  const rows: [string, (s: ReplaySide) => string][] = [
    ['requests (ok)', (s) => `${s.requests} (${s.ok})`],
    ['arrival rate (req/s)', (s) => num(s.arrivalRate)],
    ['achieved req/s (ok, first arrival to last finish)', (s) => num(s.requestsPerSecond)],
    ['input tokens P50 / P95 / P99', (s) => trio(s.inputTokens, tok)],
    ['output tokens P50 / P95 / P99', (s) => trio(s.outputTokens, tok)],
    ['TTFT P50 / P95 / P99 (ms)', (s) => trio(s.ttft, ms(1))],
    ['TPOT P50 / P95 / P99 (ms)', (s) => trio(s.tpot, ms(2))],
    ['E2E P50 / P95 / P99 (ms)', (s) => trio(s.e2e, ms(0))],
    ...BENCH_SLOS.filter((n) => rec.slo[n] || rep.slo[n]).map((n): [string, (s: ReplaySide) => string] => [
      `${n.toUpperCase()} ≤ ${msText((rep.slo[n] ?? rec.slo[n])!.threshold, 0)} ms`,
      (s) => (s.slo[n] ? `${pct(s.slo[n]!.attainment, 1)} of ${s.slo[n]!.judged}` : DASH),
    ]),
  ];
  out.push('| | recorded | replayed |', '| --- | ---: | ---: |');
  for (const [name, f] of rows) out.push(`| ${name} | ${f(rec)} | ${f(rep)} |`);
  const unbounded = r.reuse.find((x) => x.model === 'unbounded');
  const sized = r.reuse.find((x) => x.model === 'engine size');
  out.push(...prefixCacheRows(rec, rep, unbounded?.share ?? null, sized?.share ?? null), '');
  if (r.speed !== 1 && rec.arrivalRate !== null) out.push(`At ×${r.speed} the recorded arrival rate becomes ${num(rec.arrivalRate * r.speed)} req/s.`, '');
  if (unbounded) out.push(`The trace's hash ids let an unbounded prefix cache reuse ${pct(unbounded.share, 1)} of prompt tokens (${unbounded.requestsHit} of ${rec.requests} requests with a hit).`, '');
  if (unbounded?.share != null && rep.prefixCacheHitRatio !== null && rep.prefixCacheHitRatio > unbounded.share + STALE_CACHE) {
    out.push(`**Warning**: the engine found ${pct(rep.prefixCacheHitRatio, 1)} of prompt tokens cached, more than the trace's own prefixes allow: it still holds this replay's text from an earlier run with the same --seed, and TTFT reads low. Rerun with another --seed or a restarted server.`, '');
  }
  const inp = r.inputLength;
  out.push(
    `Input length against the recorded one: ${inp.exact} of ${inp.compared} exact; replayed − recorded P50 ${num(inp.tokens.p50, 0)}, P99 ${num(inp.tokens.p99, 0)} tokens (${pctSigned(inp.relative.p50)} / ${pctSigned(inp.relative.p99)}), range ${num(inp.tokens.min, 0)} to ${num(inp.tokens.max, 0)}.`,
    `Output length: ${r.outputLength.exact} of ${r.outputLength.compared} exactly as recorded${r.ignoreEos ? ' (max_tokens with ignore_eos)' : ''}.`,
    ...cachedLine(r),
    `Sent after the due time: P50 ${msText(r.sendLag.p50, 1)} ms, P99 ${msText(r.sendLag.p99, 1)} ms, max ${msText(r.sendLag.max, 1)} ms.`,
    '',
  );
  if (r.ignoreEosNote) out.push(`**Note**: ${r.ignoreEosNote}.`, '');
  out.push('| trace | requests | block size | blocks cut from | kept | start |', '| --- | ---: | ---: | --- | ---: | --- |');
  for (const f of r.files) out.push(`| ${f.path} | ${f.requests} | ${f.blockSize}${f.blockSizeFrom === 'default' ? " (Mooncake's default)" : ''} | ${f.cut ?? DASH} | ${f.sampling === null ? DASH : pct(f.sampling, 1)} | ${f.startTime ?? DASH} |`);
  out.push('');
  const cal = r.calibration;
  if (cal === null) out.push('Prompt lengths: a token per word assumed, no template (--replay-calibrate false).', '');
  else {
    out.push(`Prompt lengths, measured on the target (${cal.length} API/model pair${cal.length === 1 ? '' : 's'}): ${cal.map((c) => `${c.api}${c.model ? ` ${c.model}` : ''} ${c.fallback ?? `${num(c.tokensPerWord, 3)} tokens per word, template ${c.overhead} tokens`}`).join('; ')}.`, '');
  }
  const mapped = Object.entries(r.models);
  if (mapped.length) out.push(`Models mapped: ${mapped.map(([a, b]) => `${a} → ${b}`).join(', ')}.`, '');
  for (const n of r.notes) out.push(`Note: ${n}.`, '');
  return out;
}

/**
 * The prefix-cache rows: the engine's hits on each side, each over all of its requests (a side
 * that cannot say so shows why instead of a share of some of them), and the upper bound the
 * trace's own hash ids allow an unbounded cache, which is the same trace on both sides.
 */
export function prefixCacheRows(rec: ReplaySide, rep: ReplaySide, upperBound: number | null, engineSize: number | null = null): string[] {
  const cell = (s: ReplaySide) => (s.prefixCacheHitRatio !== null ? `${pct(s.prefixCacheHitRatio, 1)} (${s.prefixCacheFrom})` : s.prefixCacheFrom ? `${DASH} (${s.prefixCacheFrom})` : DASH);
  const bound = upperBound === null ? DASH : pct(upperBound, 1);
  const sized = engineSize === null ? [] : [`| a cache of the target engine's size over the same hash ids | ${pct(engineSize, 1)} | ${pct(engineSize, 1)} |`];
  return [
    `| prefix-cache hits (share of prompt tokens) | ${cell(rec)} | ${cell(rep)} |`,
    `| upper bound: an unbounded cache over the trace's hash ids | ${bound} | ${bound} |`,
    ...sized,
  ];
}

function cachedLine(r: ReplayReport): string[] {
  const c = r.cachedTokens;
  if (c.compared === 0) return [];
  const share = (n: number) => pct(c.promptTokens > 0 ? n / c.promptTokens : null, 1);
  return [`Cached prompt tokens of the ${c.compared} requests whose usage reports them in both runs: recorded ${c.recorded} (${share(c.recorded)}), replayed ${c.replayed} (${share(c.replayed)}); ${c.exact} of ${c.compared} requests exactly as recorded.`];
}

function pctSigned(v: number | null): string {
  return v === null ? DASH : `${v >= 0 ? '+' : ''}${(v * 100).toFixed(1)}%`;
}

/** The replay over time, for bench.html: arrivals due and sent per bucket, and the TTFT of what was sent in each. */
export function replayCharts(st: StepReport): string[] {
  const reqs = st.requests.filter((s) => s.replay);
  if (reqs.length === 0) return [];
  const last = reqs.reduce((m, s) => Math.max(m, s.start, s.replay!.scheduled), 0);
  const width = niceBucket(last);
  const x = Array.from({ length: bucketOf(last, width) + 1 }, (_, i) => Number((i * width).toFixed(3)));
  const per = (f: (s: RequestSample) => number) => x.map((_, i) => reqs.filter((s) => bucketOf(f(s), width) === i).length / width);
  const ttft = (q: number) => x.map((_, i) => {
    const v = reqs.filter((s) => bucketOf(s.start, width) === i && s.outcome === 'ok' && s.ttft !== null).map((s) => s.ttft!).sort((a, b) => a - b);
    return v.length ? percentile(v, q) * 1000 : null;
  });
  return [
    lineChart({ title: 'Replay: arrivals over time', yLabel: 'req/s', x, series: [
      { name: 'due', color: COLORS.grey, dashed: true, values: per((s) => s.replay!.scheduled) },
      { name: 'sent', color: COLORS.p50, values: per((s) => s.start) }] }),
    lineChart({ title: 'Replay: TTFT by send time', yLabel: 'ms', x, series: [
      { name: 'P50', color: COLORS.p50, values: ttft(50) }, { name: 'P99', color: COLORS.p99, values: ttft(99) }] }),
  ];
}
