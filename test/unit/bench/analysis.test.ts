/**
 * The bench report's Analysis (src/bench/analysis.ts): each step's figures judged by the
 * bottleneck rules, and the Markdown lines: the limit with its figures and the knob, or,
 * for a step with room, its load against the load where the SLO broke.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { analyzeSteps, renderAnalysis, stepSignals } from '../../../src/bench/analysis.js';
import { renderMarkdown } from '../../../src/bench/markdown.js';
import { renderHtml } from '../../../src/bench/html.js';
import { summarizePhase } from '../../../src/bench/report.js';
import { fakeReport, reportValidator } from './fixture.js';

/** The fixture with its SLOs met on the first two steps (no failed request there). */
function report() {
  const r = fakeReport();
  for (const st of r.steps.slice(0, 2)) {
    st.requests = st.requests.map((s) => (s.outcome === 'ok' ? s : { ...s, outcome: 'ok', status: 200, error: null, ttft: 0.05, tpot: 0.02, outputTokens: 128 }));
    st.summary = summarizePhase(st.requests, 10, { ttft: 0.2, tpot: 0.05 }, 128);
  }
  r.config['slo'] = { ttft: 0.2, tpot: 0.05 };
  return r;
}

test('steps with room are none; the step with a queue and an empty KV cache is queue, with the knob', () => {
  const r = report();
  const kinds = analyzeSteps(r).map((v) => v.kind);
  assert.deepEqual(kinds, ['none', 'none', 'queue']);
  const q = r.steps[2]!.analysis!;
  assert.equal(q.evidence.find((e) => e.signal === 'engineWaiting')!.value, 2.5);
  assert.equal(q.evidence.find((e) => e.signal === 'queueShare')!.value, null, 'no engine histogram in the fixture: optional, not measured');
  assert.match(q.advice[0]!.text, /--max-num-seqs/);
  assert.ok(reportValidator()(r), 'the analysis is in the schema');
});

test('the TPOT floor is the single-stream median, and bench never blames a proxy it does not use', () => {
  const r = report();
  const s = stepSignals(r.steps[2]!, r);
  assert.equal(s.values.tpotFloor, r.singleStream!.summary.tpot.p50);
  assert.equal(s.basis.tpotFloor, 'the single-stream TPOT median');
  assert.equal(s.values.proxyLoopDelayP99, 0);
});

test('the Markdown Analysis names each step\'s limit, its figures and the change; steps with room say how much', () => {
  const r = report();
  analyzeSteps(r);
  const text = renderAnalysis(r).join('\n');
  assert.match(text, /^## Analysis/);
  assert.match(text, /\*\*8 req\/s: queue\*\*\. Requests wait for a batch slot.*engineWaiting 2\.5 requests \(rule: >= 1\).*Change: raise --max-num-seqs/);
  const loads = r.steps.map((st) => st.summary.requestsPerSecond);
  assert.match(text, new RegExp(`\\*\\*1 req/s: none\\*\\*.*Room: ${loads[0]!.toFixed(2)} req/s is ${Math.round((100 * loads[0]!) / loads[2]!)} % of the ${loads[2]!.toFixed(2)} req/s where the SLO broke \\(8 req/s\\)`));
  assert.ok(renderMarkdown(r).includes('## Analysis'));
  assert.ok(renderHtml(r).includes('<b>8 req/s: queue</b>'));
});

test('a step judged none that still missed its SLOs says so instead of claiming room', () => {
  const r = fakeReport(); // one failed request per step, and TPOT misses: attainment below 99 %
  analyzeSteps(r);
  r.steps[0]!.analysis = { ...r.steps[0]!.analysis!, kind: 'none' };
  assert.match(renderAnalysis(r).join('\n'), /\*\*1 req\/s: none\*\*.*Yet the SLOs were missed \(worst attainment [\d.]+ %\)/);
});

test('a rate step that sent less than 90 % of its offered rate is flagged as under-delivered; a full one is not', () => {
  const r = report();
  analyzeSteps(r);
  const last = r.steps[2]!;
  const offered = last.load * last.durationSeconds;
  last.summary = { ...last.summary, requests: Math.floor(0.5 * offered) };
  const text = renderAnalysis(r).join('\n');
  assert.match(text, new RegExp(`\\*\\*8 req/s: queue\\*\\*.* The step under-delivered: it sent ${Math.floor(0.5 * offered)} requests in ${last.durationSeconds} s \\(${(Math.floor(0.5 * offered) / last.durationSeconds).toFixed(2)} req/s\\) of the 8 req/s offered`));
  last.summary = { ...last.summary, requests: offered };
  const line = renderAnalysis(r).find((l) => l.startsWith('- **8 req/s'));
  assert.ok(line);
  assert.doesNotMatch(line, /under-delivered/);
});
