/**
 * The bottleneck rules and evaluator (src/metrics/bottleneck/): each kind from a snapshot
 * shaped like its regime, the evidence it cites (unit, window, threshold), the fallbacks
 * when a signal is missing, and both halves of the hysteresis (exit thresholds, confirmation).
 */
import { test } from 'node:test';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { benchLimit } from '../../../src/metrics/bottleneck/capacity.js';
import { testConfig } from '../../helpers.js';
import { renderBottleneckDoc } from '../../../scripts/bottleneck-doc.js';
import assert from 'node:assert/strict';
import { BottleneckJudge, classify, judgeOnce } from '../../../src/metrics/bottleneck/judge.js';
import { BOTTLENECK_KINDS, RULES } from '../../../src/metrics/bottleneck/rules.js';
import { SIGNALS, SIGNAL_NAMES, emptySignals, type SignalName, type Signals } from '../../../src/metrics/bottleneck/signals.js';
import { ModelWindow } from '../../../src/metrics/bottleneck/window.js';
import { modelSignals } from '../../../src/metrics/bottleneck/live.js';
import { UNMEASURED, type RequestRecord } from '../../../src/record/record.js';
import { MachineHistory, readMachine } from '../../../src/metrics/bottleneck/machine.js';
import { MachineSnapshot } from '../../../src/collectors/snapshot.js';
import { engineOf } from '../../helpers/machine.js';

/** A healthy, lightly loaded model on a vLLM with every signal present. */
function base(): Signals {
  const s = emptySignals(30, 'vllm');
  Object.assign(s.values, {
    requests: 60, requestsPerSecond: 2, failureRatio: 0, ttftP50: 0.06, ttftP99: 0.09, ttftOverTarget: 0.09, tpotP50: 0.046, tpotOverTarget: 0.48,
    latencyOverTarget: 0.48, tpotFloor: 0.045, tpotGrowth: 1.02, sloAttainment: 1, engineWaiting: 0, engineRunning: 3, kvCacheUsage: 0.05, kvCacheUsageMax: 0.07,
    preemptionsPerSecond: 0, queueTimeMean: 0.001, queueShare: 0.02, prefillShare: 0.7, gpuUtilization: 0.4, gpuPowerViolation: 0, gpuThermalViolation: 0,
    gpuSmClockRatio: 1, gpuDramActive: 0.2, proxyLoopDelayP99: 0.002, proxyLagShare: 0.03,
  } satisfies Partial<Record<SignalName, number>>);
  return s;
}

function withValues(v: Partial<Record<SignalName, number | null>>, s = base()): Signals {
  Object.assign(s.values, v);
  return s;
}

const REGIMES: { kind: (typeof BOTTLENECK_KINDS)[number]; values: Partial<Record<SignalName, number | null>>; cites: SignalName[] }[] = [
  { kind: 'none', values: {}, cites: ['latencyOverTarget', 'requestsPerSecond', 'engineWaiting', 'kvCacheUsage'] },
  { kind: 'queue', values: { engineWaiting: 40, engineRunning: 8, kvCacheUsageMax: 0.2, queueShare: 0.9, ttftP99: 6, ttftOverTarget: 6, latencyOverTarget: 6 }, cites: ['engineWaiting', 'kvCacheUsageMax', 'queueShare', 'engineRunning'] },
  { kind: 'kv_cache', values: { kvCacheUsage: 0.97, kvCacheUsageMax: 1, preemptionsPerSecond: 0.5, engineWaiting: 12 }, cites: ['kvCacheUsage', 'preemptionsPerSecond'] },
  { kind: 'prefill', values: { ttftP99: 4, ttftOverTarget: 4, latencyOverTarget: 4, prefillShare: 0.95, engineWaiting: 0.2 }, cites: ['ttftOverTarget', 'prefillShare', 'engineWaiting'] },
  { kind: 'decode', values: { tpotP50: 0.2, tpotGrowth: 4.4, gpuDramActive: 0.9, tpotOverTarget: 2.1, latencyOverTarget: 2.1 }, cites: ['tpotGrowth', 'gpuDramActive', 'tpotFloor'] },
  { kind: 'gpu_throttle', values: { gpuPowerViolation: 0.4, tpotOverTarget: 1.5, latencyOverTarget: 1.5 }, cites: ['gpuPowerViolation', 'latencyOverTarget'] },
  { kind: 'upstream_errors', values: { failureRatio: 0.5 }, cites: ['failureRatio', 'requests'] },
  { kind: 'proxy', values: { proxyLoopDelayP99: 0.2, proxyLagShare: 3.3 }, cites: ['proxyLoopDelayP99', 'proxyLagShare', 'ttftP50'] },
  { kind: 'idle', values: { requests: 1 }, cites: ['requests'] },
];

for (const r of REGIMES) {
  test(`a ${r.kind} regime is judged ${r.kind}, citing ${r.cites.join(', ')} with units and windows`, () => {
    const v = judgeOnce(withValues(r.values), 1000);
    assert.equal(v.kind, r.kind, JSON.stringify(v));
    assert.equal(v.since, 1000);
    for (const sig of r.cites) {
      const e = v.evidence.find((x) => x.signal === sig);
      assert.ok(e, `${sig} in ${JSON.stringify(v.evidence)}`);
      assert.equal(e.unit, SIGNALS[sig].unit);
      assert.ok(['30s', 'now', 'since start'].includes(e.window), e.window);
    }
    assert.deepEqual(v.advice.map((a) => a.engine), ['vllm', 'sglang', 'llamacpp']);
    assert.ok(v.advice.every((a) => a.text.length > 10));
  });
}

test('every rule cites signals from the table, every kind but none and unknown (what no row explains) has a row, thresholds hysteresis runs the right way', () => {
  const kinds = new Set<string>(RULES.map((r) => r.kind));
  for (const k of BOTTLENECK_KINDS) if (k !== 'none' && k !== 'unknown') assert.ok(kinds.has(k), k);
  assert.ok(!kinds.has('unknown'), 'unknown is the fallback of judge.ts, not a row');
  for (const r of RULES) {
    for (const alt of r.when) for (const c of alt) {
      assert.ok((SIGNAL_NAMES as readonly string[]).includes(c.signal), c.signal);
      // The exit threshold is looser: easier to stay than to enter.
      assert.ok(c.op === '>=' ? c.exit <= c.enter : c.exit >= c.enter, `${r.kind} ${c.signal}`);
    }
    for (const e of r.evidence) assert.ok((SIGNAL_NAMES as readonly string[]).includes(e), e);
  }
});

test('the advice names each engine\'s own flags', () => {
  const advice = (kind: string) => Object.fromEntries(judgeOnce(withValues(REGIMES.find((r) => r.kind === kind)!.values), 0).advice.map((a) => [a.engine, a.text]));
  const q = advice('queue');
  assert.match(q['vllm']!, /--max-num-seqs/);
  assert.match(q['sglang']!, /--max-running-requests/);
  assert.match(q['llamacpp']!, /--parallel/);
  const kv = advice('kv_cache');
  assert.match(kv['vllm']!, /--gpu-memory-utilization/);
  assert.match(kv['vllm']!, /--enable-prefix-caching/);
  assert.match(kv['sglang']!, /--mem-fraction-static/);
  assert.match(kv['llamacpp']!, /--ctx-size/);
  const sg = judgeOnce(withValues({}, Object.assign(base(), { engine: 'sglang' })), 0);
  assert.equal(sg.advice[0]!.engine, 'sglang', 'the configured engine comes first');
});

test('prefill: the prefix-cache model\'s shares are its evidence and its verdict\'s knob leads the advice; without the model the daemon says how to find out', () => {
  const prefill = REGIMES.find((r) => r.kind === 'prefill')!.values;
  const text = (v: ReturnType<typeof judgeOnce>) => Object.fromEntries(v.advice.map((a) => [a.engine, a.text]));
  // No model (--prefix-cache off): no prefix evidence at all, the prefix-caching knob first with how to measure it; bench (no such flag) says the knob alone.
  const off = judgeOnce(withValues(prefill), 0);
  assert.equal(off.evidence.filter((e) => e.signal.startsWith('prefix')).length, 0, JSON.stringify(off.evidence));
  assert.equal(text(off)['vllm'], '--enable-prefix-caching for shared prompt prefixes (--prefix-cache true measures whether it would pay), --enable-chunked-prefill with a larger --max-num-batched-tokens (fewer steps per prompt), shorter prompts, or disaggregated prefill (--kv-transfer-config)');
  assert.equal(text(judgeOnce(withValues(prefill), 0, 'bench'))['sglang'], 'keep the radix cache on (no --disable-radix-cache), a larger --chunked-prefill-size, shorter prompts, or prefill/decode disaggregation (--disaggregation-mode)');
  // The model says caching is off while the traffic reuses 81 %: that is the knob, with the figures.
  const s = withValues({ ...prefill, prefixReuseTraffic: 0.8148, prefixReuseEngineSize: 0.8, prefixReuseDelivered: 0 });
  s.basis.prefixReuseDelivered = 'the engine\'s prefix-cache counters';
  s.prefix = {
    windowSeconds: 300, traffic: 0.8148, engineSize: 0.8, delivered: 0, deliveredFrom: 'the engine\'s prefix-cache counters', keptShare: 1,
    verdict: { kind: 'caching_off', summary: 'prefix caching is off', advice: { vllm: 'enable prefix caching: --enable-prefix-caching', sglang: 'drop --disable-radix-cache', llamacpp: '--cache-prompt on' } },
  };
  const on = judgeOnce(s, 0);
  assert.equal(on.kind, 'prefill');
  const ev = on.evidence.filter((e) => e.signal.startsWith('prefix'));
  assert.deepEqual(ev.map((e) => [e.signal, e.value, e.window, e.unit]), [['prefixReuseTraffic', 0.8148, '300s', 'ratio'], ['prefixReuseEngineSize', 0.8, '300s', 'ratio'], ['prefixReuseDelivered', 0, '300s', 'ratio']]);
  assert.equal(ev[2]!.basis, 'the engine\'s prefix-cache counters');
  assert.equal(text(on)['vllm'], 'prefix cache: caching_off: enable prefix caching: --enable-prefix-caching; other prefill knobs: --enable-chunked-prefill with a larger --max-num-batched-tokens (fewer steps per prompt), shorter prompts, or disaggregated prefill (--kv-transfer-config)');
  assert.match(text(on)['llamacpp']!, /^prefix cache: caching_off: --cache-prompt on; other prefill knobs: larger --batch-size/);
  // The model runs but has too few requests for a verdict: the knob as without it, no pointer to a flag already on.
  s.prefix = { ...s.prefix, verdict: null };
  assert.match(text(judgeOnce(s, 0))['vllm']!, /^--enable-prefix-caching for shared prompt prefixes, --enable-chunked-prefill/);
  // Only prefill reads it: a queue verdict with the same figures cites none of them.
  const q = judgeOnce(withValues({ ...REGIMES.find((r) => r.kind === 'queue')!.values, prefixReuseTraffic: 0.8 }), 0);
  assert.equal(q.kind, 'queue');
  assert.equal(q.evidence.filter((e) => e.signal.startsWith('prefix')).length, 0);
});

test('without engine metrics: latency over target is unknown naming what is missing; within target is none', () => {
  const engineless: Partial<Record<SignalName, null>> = { engineWaiting: null, engineRunning: null, kvCacheUsage: null, kvCacheUsageMax: null, preemptionsPerSecond: null, queueTimeMean: null, queueShare: null, prefillShare: null };
  const slow = judgeOnce(withValues({ ...engineless, ttftP99: 5, ttftOverTarget: 5, latencyOverTarget: 5 }), 0);
  assert.equal(slow.kind, 'unknown');
  for (const m of ['engineWaiting', 'kvCacheUsage', 'prefillShare'] as const) assert.ok(slow.missing.includes(m), `${m} in ${slow.missing.join(',')}`);
  assert.match(slow.summary, /missing: .*engineWaiting/);
  assert.match(slow.advice[0]!.text, /--engine-metrics/);
  const fine = judgeOnce(withValues(engineless), 0);
  assert.equal(fine.kind, 'none');
});

test('an optional signal that is missing (no GPM) still lets decode through, and the evidence shows it as null', () => {
  const v = judgeOnce(withValues({ tpotGrowth: 3, gpuDramActive: null }), 0);
  assert.equal(v.kind, 'decode');
  assert.equal(v.evidence.find((e) => e.signal === 'gpuDramActive')!.value, null);
});

test('without a TTFT SLO the TTFT ratio uses the fallback target, and says so', () => {
  const st = { requests: 10, failed: 0, ttft: [3, 3, 3, 3], tpot: [0.05], tpotAlone: [], concurrencyMean: 1, sloAttainment: null };
  const s = modelSignals(st, {}, null, 30, 'sglang');
  assert.equal(s.values.ttftOverTarget, 3);
  assert.match(s.basis.ttftOverTarget!, /fallback target 1 s/);
  assert.equal(modelSignals(st, { ttft: 0.5 }, null, 30, 'sglang').values.ttftOverTarget, 6);
});

test('an engine with a queue histogram and no prefill one (SGLang): the prefill share is 1 - queue share, and the evidence says so', async () => {
  const machine = new MachineSnapshot();
  const queue = (sum: number, count: number) => machine.setEngine(engineOf('s', {}, { queueTime: { sum, count, buckets: [] } }, 'sglang'));
  const h = new MachineHistory();
  queue(9, 1); // before the window: not counted
  h.add(readMachine(machine.read(), 0), -Infinity);
  queue(9 + 4 * 0.5, 5);
  h.add(readMachine(machine.read(), 10_000), -Infinity);
  const m = h.signals(2);
  assert.equal(m.values.queueTimeMean, 0.5);
  assert.equal(m.values.queueShare, 0.25);
  assert.equal(m.values.prefillShare, 0.75);
  assert.match(m.basis.prefillShare!, /no engine prefill histogram/);
  const s = withValues(m.values);
  Object.assign(s.basis, m.basis);
  const v = judgeOnce(withValues({ ttftP99: 4, ttftOverTarget: 4, latencyOverTarget: 4, engineWaiting: 0 }, s), 0);
  assert.equal(v.kind, 'prefill');
  assert.match(v.evidence.find((e) => e.signal === 'prefillShare')!.basis!, /1 - queueShare/);
});

test('hysteresis, exit thresholds: a current kv_cache verdict holds at 85 % usage, a fresh one needs 90 %', () => {
  const at85 = withValues({ kvCacheUsage: 0.85, kvCacheUsageMax: 0.88, preemptionsPerSecond: 0.2 });
  assert.equal(classify(at85, null).kind, 'none');
  assert.equal(classify(at85, 'kv_cache').kind, 'kv_cache');
});

test('hysteresis, confirmation: a regime flipping every evaluation never flips the verdict; a lasting change does, once', () => {
  const judge = new BottleneckJudge({ confirm: 2 });
  const errors = withValues({ failureRatio: 0.6 });
  const fine = base();
  const kinds: string[] = [];
  for (let i = 0; i < 21; i++) kinds.push(judge.update(i % 2 === 0 ? fine : errors, i * 5000).kind);
  assert.deepEqual(new Set(kinds), new Set(['none']));
  const v1 = judge.update(errors, 100_000);
  assert.equal(v1.kind, 'none', 'one win is not enough');
  const v2 = judge.update(errors, 105_000);
  assert.equal(v2.kind, 'upstream_errors');
  assert.equal(v2.since, 105_000);
  assert.equal(judge.update(errors, 110_000).since, 105_000, 'since stays while the kind does');
});

function record(over: Partial<RequestRecord>): RequestRecord {
  return { ...UNMEASURED, route: 'chat', operation: 'chat', model: 'm', outcome: 'ok', status: 200, streamed: true, ttft: 0.06, ttfo: 0.06, e2e: 1.06, outputTokens: 21, inFlightAtFirstToken: 1, startedAt: 0, ...over } as RequestRecord;
}

test('hysteresis end to end: errors that come and go every 4 s, judged each second over a 30 s window, change the verdict at most once', () => {
  const w = new ModelWindow();
  const judge = new BottleneckJudge({ confirm: 2 });
  const kinds: string[] = [];
  for (let t = 0; t < 120; t++) {
    const failing = Math.floor(t / 4) % 2 === 1;
    for (let k = 0; k < 4; k++) w.add(record({ outcome: failing && k < 3 ? 'upstream_error' : 'ok', status: failing && k < 3 ? 500 : 200 }), null, t * 1000 + k);
    w.prune(t * 1000 - 30_000);
    const s = modelSignals(w.stats(), {}, 0.05, 30, 'vllm');
    Object.assign(s.values, { engineWaiting: 0, engineRunning: 2, kvCacheUsage: 0.1, kvCacheUsageMax: 0.1, preemptionsPerSecond: 0, queueShare: 0, prefillShare: 0.5, proxyLoopDelayP99: 0.001 });
    kinds.push(judge.update(s, t * 1000).kind);
  }
  const changes = kinds.filter((k, i) => i > 0 && k !== kinds[i - 1]).length;
  assert.ok(changes <= 1, `verdict changed ${changes} times: ${kinds.join(' ')}`);
  // Errors are 3/8 of the window's requests: it does settle on upstream_errors.
  assert.equal(kinds[kinds.length - 1], 'upstream_errors');
});

test('schemas/status.schema.json lists exactly the kinds and signals the code has', () => {
  const schema = JSON.parse(readFileSync(new URL('../../../../schemas/status.schema.json', import.meta.url), 'utf8'));
  const b = schema.properties.models.items.properties.bottleneck.properties;
  assert.deepEqual(b.kind.enum, [...BOTTLENECK_KINDS]);
  assert.deepEqual(b.evidence.items.properties.signal.enum, [...SIGNAL_NAMES]);
  assert.deepEqual(b.missing.items.enum, [...SIGNAL_NAMES]);
});

test('docs/bottleneck.md\'s rule and signal tables are the code\'s (run `npm run docs` after changing either)', () => {
  const doc = readFileSync(new URL('../../../../docs/bottleneck.md', import.meta.url), 'utf8');
  assert.equal(doc, renderBottleneckDoc(doc));
});

test('--bottleneck-bench: the first step that broke its SLOs is the limit; none then cites the share of it in use', () => {
  const report = (steps: unknown[]) => JSON.stringify({ schemaVersion: 1, steps });
  const step = (load: number, rps: number, attainment: number) => ({ mode: 'rate', load, summary: { requestsPerSecond: rps, slo: { ttft: { attainment } } } });
  assert.deepEqual(benchLimit(report([step(1, 1, 1), step(4, 3.9, 0.999), step(8, 6.2, 0.93), step(16, 6.5, 0.4)])), { requestsPerSecond: 6.2, step: 'step 3 (8 req/s)', promptTokens: null, outputTokens: null, slo: 'ttft', kind: null });
  assert.equal(benchLimit(report([step(1, 1, 1)])), null, 'no step broke');
  assert.throws(() => benchLimit('{"hello": 1}'), /not an infermeter bench report/);
  const s = withValues({ loadVsBenchLimit: 0.32 });
  s.basis.loadVsBenchLimit = '--bottleneck-bench: the SLO broke at 6.2 req/s, step 3 (8 req/s)';
  const v = judgeOnce(s, 0);
  assert.equal(v.kind, 'none');
  const e = v.evidence.find((x) => x.signal === 'loadVsBenchLimit')!;
  assert.equal(e.value, 0.32);
  assert.match(e.basis!, /broke at 6\.2 req\/s/);
});

test('--bottleneck-bench with a file that is not a bench report is refused naming the flag', () => {
  const dir = mkdtempSync(join(tmpdir(), 'bb-'));
  try {
    writeFileSync(join(dir, 'x.json'), '{"not": "a report"}');
    assert.throws(() => testConfig({ upstream: 'http://127.0.0.1:1', bottleneckBench: join(dir, 'x.json') }), (err: Error) => /--bottleneck-bench/.test(err.message) && /not an infermeter bench report/.test(err.message));
    assert.throws(() => testConfig({ upstream: 'http://127.0.0.1:1', bottleneckWindow: '2s', bottleneckInterval: '5s' }), /--bottleneck-window/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('none says when its latency targets are infermeter\'s defaults (no SLO set), and not when they are SLOs', () => {
  const fallback = base();
  fallback.basis.ttftOverTarget = 'no TTFT SLO: fallback target 1 s';
  fallback.basis.tpotOverTarget = 'no TPOT SLO: fallback target 0.1 s';
  assert.equal(judgeOnce(fallback, 0).summary, 'meeting its latency targets with room (no SLO set: infermeter\'s default TTFT 1 s and TPOT 100 ms; set slos: for your own)');
  const tpotOnly = base();
  tpotOnly.basis.ttftOverTarget = 'no TTFT SLO: fallback target 1 s';
  assert.match(judgeOnce(tpotOnly, 0).summary, /default TTFT 1 s;/);
  assert.equal(judgeOnce(base(), 0).summary, 'meeting its latency targets with room', 'both targets are SLOs: no default named');
});

test('traffic that stops: idle at the first evaluation with no request in the window, as a model that never had any', () => {
  const judge = new BottleneckJudge({ confirm: 2 });
  assert.equal(judge.update(base(), 1).kind, 'none');
  assert.equal(judge.update(base(), 2).kind, 'none');
  const stopped = judge.update(withValues({ requests: 0, requestsPerSecond: 0, ttftP99: null, tpotP50: null, latencyOverTarget: null, ttftOverTarget: null, tpotOverTarget: null, engineRunning: 0 }), 3);
  assert.equal(stopped.kind, 'idle', 'no confirmation needed: an empty window is a count, not a noisy reading');
  assert.equal(stopped.since, 3);
  const never = new BottleneckJudge({ confirm: 2 }).update(withValues({ requests: 0, requestsPerSecond: 0 }), 3);
  assert.deepEqual([never.kind, never.summary], [stopped.kind, stopped.summary]);
  // Sparse traffic (one or two requests in the window) is confirmed as usual: one stream's gaps do not flap the verdict.
  const sparse = new BottleneckJudge({ confirm: 2 });
  sparse.update(base(), 1);
  assert.equal(sparse.update(withValues({ requests: 2 }), 2).kind, 'none');
  assert.equal(sparse.update(withValues({ requests: 2 }), 3).kind, 'idle');
  // None finished while the engine still runs a batch (long requests under load): confirmed as usual, not at once.
  const busy = new BottleneckJudge({ confirm: 2 });
  busy.update(base(), 1);
  const empty = { requests: 0, requestsPerSecond: 0, ttftP99: null, tpotP50: null, latencyOverTarget: null, ttftOverTarget: null, tpotOverTarget: null, engineRunning: 12 };
  assert.equal(busy.update(withValues(empty), 2).kind, 'none');
  assert.equal(busy.update(withValues(empty), 3).kind, 'idle');
  // No engine figures at all (no engine collector): the count alone decides, at once.
  assert.equal(new BottleneckJudge({ confirm: 2 }).update(withValues({ ...empty, engineRunning: null }), 3).kind, 'idle');
  // Traffic again: the usual confirmation applies to leaving idle.
  assert.equal(judge.update(base(), 4).kind, 'idle');
  assert.equal(judge.update(base(), 5).kind, 'none');
});

test('unknown asks only for the signals that are missing, with the flags of whoever reads it (bench has no --gpu-source)', () => {
  const slow = { ttftOverTarget: 3, latencyOverTarget: 3, prefillShare: 0.1 };
  const noGpu = withValues({ ...slow, gpuUtilization: null, gpuPowerViolation: null, gpuThermalViolation: null, gpuSmClockRatio: null, gpuDramActive: null });
  const live = judgeOnce(noGpu, 0);
  assert.equal(live.kind, 'unknown');
  assert.equal(live.advice[0]!.text, 'give infermeter the missing signals: the GPU readings (nvidia-smi on PATH or --nvidia-smi, or --gpu-source dcgm-exporter)');
  const bench = judgeOnce(noGpu, 0, 'bench');
  for (const a of bench.advice) {
    assert.doesNotMatch(a.text, /--gpu-source|engine/, 'the engine series are there: not asked for; bench has no --gpu-source');
    assert.match(a.text, /GPU readings \(run bench on the GPU machine/);
  }
  const noEngine = judgeOnce(withValues({ ...slow, prefillShare: null, engineWaiting: null, engineRunning: null, kvCacheUsage: null, kvCacheUsageMax: null, preemptionsPerSecond: null, queueTimeMean: null, queueShare: null }), 0, 'bench');
  assert.equal(noEngine.kind, 'unknown');
  assert.deepEqual(noEngine.advice.map((a) => a.text), [
    'give infermeter the missing signals: the engine\'s series (--engine-metrics, the server\'s /metrics)',
    'give infermeter the missing signals: the engine\'s series (start SGLang with --enable-metrics and point --engine-metrics at it)',
    'give infermeter the missing signals: the engine\'s series (start llama-server with --metrics and point --engine-metrics at it)',
  ]);
});
