/** The report as a Markdown page: environment, single-stream table, one row per load step. */
import type { BenchReport, BenchSlo, PhaseSummary } from './report.js';
import { BENCH_SLOS } from './report.js';
import type { Distribution } from './stats.js';
import { renderAnalysis } from './analysis.js';
import { DASH, engineText, errorsText, gib, gpuText, msText, num, pct, stepLabel } from './format.js';
import { renderReplay } from './replay/render.js';

/** Distinct synthetic prompts share little beyond a block or two; more than this was cached before. */
const CACHED_WARNING = 0.1;

export function renderMarkdown(r: BenchReport): string {
  const c = r.config;
  const out: string[] = [];
  out.push(`# infermeter bench: ${String(c['model'] ?? DASH)}`, '');
  if (r.partial) out.push(`> **PARTIAL REPORT**: ${r.partialReason ?? ''}`, '');
  const host = r.environment['host'] as { cpuModel: string | null; cpus: number };
  out.push(
    '| | |', '| --- | --- |',
    `| date | ${String(r.environment['date'])} |`,
    `| target | ${String(c['target'])} (${engineText(r)}) |`,
    `| GPU | ${gpuText(r)} |`,
    `| host CPU | ${host.cpuModel ?? DASH} (${host.cpus} cores) |`,
    r.replay
      ? `| inputs | replayed traces: ${r.replay.files.map((f) => f.path).join(', ')}; ignore_eos ${c['ignoreEos'] ? 'sent' : 'not sent'} |`
      : `| inputs | ${String(c['prompts'])}; ${c['inputTokens'] ?? DASH} input tokens, ${String(c['outputTokens'])} output tokens, ignore_eos ${c['ignoreEos'] ? 'sent' : 'not sent'} |`,
    `| infermeter | ${String(r.environment['infermeterVersion'])}: \`${(r.environment['command'] as string[]).join(' ')}\` |`,
    '',
  );
  const ss = r.singleStream;
  if (ss) {
    const s = ss.summary;
    const hits = ss.resources.prefixCacheHitRatio;
    out.push(`## Single stream (${s.ok}/${s.requests} ok, output length matched in ${s.outputLengthMatched}/${s.ok}${hits === null ? '' : `, prefix cache hits ${pct(hits)}`})`, '');
    out.push('| metric | min | mean | P50 | P95 | P99 | max |', '| --- | ---: | ---: | ---: | ---: | ---: | ---: |');
    const row = (name: string, d: Distribution, f: (v: number | null) => string) =>
      `| ${name} | ${f(d.min)} | ${f(d.mean)} | ${f(d.p50)} | ${f(d.p95)} | ${f(d.p99)} | ${f(d.max)} |`;
    out.push(row('TTFT (ms)', s.ttft, (v) => msText(v)), row('TPOT (ms)', s.tpot, (v) => msText(v, 2)), row('E2E (ms)', s.e2e, (v) => msText(v, 0)), row('generation rate (tok/s)', s.generationRate, (v) => num(v, 1)), '');
  }
  if (r.steps.length > 0) {
    const slos = BENCH_SLOS.filter((n) => r.steps.some((st) => st.summary.slo[n]));
    out.push('## Load steps', '');
    out.push(
      `| load | req/s | output tok/s | TTFT P50 / P95 / P99 (ms) | TPOT P50 / P95 / P99 (ms) | E2E P50 / P99 (ms) | goodput (req/s) |${slos.map((n) => ` ${n.toUpperCase()} ≤ ${msText(r.steps[0]!.summary.slo[n]?.threshold, 0)} ms |`).join('')} errors | GPU util mean / max | GPU power mean (W) | KV cache mean / max | running / waiting mean |`,
      `| --- |${' ---: |'.repeat(6 + slos.length)} --- |${' ---: |'.repeat(4)}`,
    );
    for (const st of r.steps) {
      const s = st.summary;
      const res = st.resources;
      out.push(
        `| ${stepLabel(st)} | ${num(s.requestsPerSecond)} | ${num(s.outputTokensPerSecond, 0)} | ${tri(s, 'ttft', 1)} | ${tri(s, 'tpot', 2)} | ${msText(s.e2e.p50, 0)} / ${msText(s.e2e.p99, 0)} | ${num(s.goodput)} |` +
          slos.map((n) => ` ${attain(s, n)} |`).join('') +
          ` ${errorsText(s.errors)} | ${pct(res.gpuUtilization.mean)} / ${pct(res.gpuUtilization.max)} | ${num(res.gpuPowerWatts.mean, 0)} | ${pct(res.kvCacheUsage.mean)} / ${pct(res.kvCacheUsage.max)} | ${num(res.requestsRunning.mean, 1)} / ${num(res.requestsWaiting.mean, 1)} |`,
      );
    }
    out.push('');
    out.push(...energyTable(r));
    const mem = r.steps.map((st) => st.resources.gpuMemoryUsedBytes.max).filter((v): v is number => v !== null);
    if (mem.length) out.push(`GPU memory used, max over steps: ${gib(Math.max(...mem))} GiB.`, '');
  }
  if (r.replay) out.push(...renderReplay(r.replay));
  const cached = r.replay ? [] : [...(r.singleStream ? [['single stream', r.singleStream.resources.prefixCacheHitRatio] as const] : []), ...r.steps.map((st) => [stepLabel(st), st.resources.prefixCacheHitRatio] as const)]
    .filter(([, ratio]) => ratio !== null && ratio > CACHED_WARNING);
  if (cached.length) {
    out.push(`**Warning**: the engine found ${cached.map(([name, ratio]) => `${pct(ratio)} of prompt tokens (${name})`).join(', ')} in its prefix cache: the prompts were cached, most likely by an earlier run with the same --seed, and TTFT reads low. Rerun with another --seed or a restarted server.`, '');
  }
  out.push(...renderAnalysis(r));
  out.push(`Percentiles: ${r.definitions['percentiles']}. TPOT = ${r.definitions['tpot']}. Goodput = ${r.definitions['goodput']}.`, '');
  if (r.monitor.gpuError) out.push(`GPU sampling: ${r.monitor.gpuError}.`, '');
  if (r.monitor.engineError) out.push(`Engine sampling: ${r.monitor.engineError}.`, '');
  return out.join('\n');
}

/** Per step: the GPUs' energy, J per output token and per good one, cost per million output tokens. */
function energyTable(r: BenchReport): string[] {
  if (!r.steps.some((st) => st.energy)) return r.steps.some((st) => st.energy === null) ? ['Energy: no GPU reported power (see GPU sampling below).', ''] : [];
  const currency = r.steps.map((st) => st.energy?.currency).find((c) => c) ?? null;
  const out = [
    `| load | GPU energy (J) | GPUs | mean power per GPU (W) | output tokens | J / output token | J / good output token | cost / 1M output tokens${currency ? ` (${currency})` : ''} |`,
    `| --- |${' ---: |'.repeat(7)}`,
  ];
  for (const st of r.steps) {
    const e = st.energy;
    if (!e) {
      out.push(`| ${stepLabel(st)} |${` ${DASH} |`.repeat(7)}`);
      continue;
    }
    const watts = e.gpuSeconds > 0 ? e.joules / e.gpuSeconds : null;
    out.push(`| ${stepLabel(st)} | ${num(e.joules, 0)} | ${e.gpus} | ${num(watts, 0)} | ${e.outputTokens} | ${num(e.joulesPerOutputToken, 3)} | ${num(e.joulesPerGoodOutputToken, 3)} | ${num(e.costPerMillionOutputTokens, 3)} |`);
  }
  out.push('', `Energy: ${r.definitions['energy'] ?? 'the GPUs\' power readings integrated over the step'}.`, '');
  return out;
}

function tri(s: PhaseSummary, key: 'ttft' | 'tpot', digits: number): string {
  const d = s[key];
  return `${msText(d.p50, digits)} / ${msText(d.p95, digits)} / ${msText(d.p99, digits)}`;
}

function attain(s: PhaseSummary, n: BenchSlo): string {
  return pct(s.slo[n]?.attainment ?? null, 1);
}
