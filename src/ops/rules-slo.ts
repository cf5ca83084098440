/**
 * SLO rules from the SLO config: latency quantiles per model, exact SLO error ratios over
 * the standard windows, multi-window multi-burn-rate alerts (Google SRE workbook, ch. 5)
 * on those ratios, and a direct "P99 above threshold" alert per SLO.
 *
 * Every ratio is guarded: with no judged requests in a window the denominator is filtered
 * out (`> 0`) and the ratio has no sample, so no alert can fire on an idle service; with
 * requests but no bad ones the ratio is 0, not missing (dashboards show a flat line).
 */
import { SLO_NAMES, errorBudget, sloSeries, type SloConfig, type SloName, type SloSeries } from '../slo/config.js';
import { M, SLO_HISTOGRAM } from '../slo/names.js';
import { UPSTREAM_FAILURES } from '../record/record.js';
import { latencyQuantile } from '../slo/quantile.js';
import type { Rule } from './rules-types.js';
import { STANDARD_WINDOWS, type WindowScale } from '../slo/windows.js';

export const QUANTILES = [0.5, 0.95, 0.99] as const;
export const QUANTILE_WINDOW = '5m';
/** How long a P99 must stay above its threshold before the direct alert fires. */
export const P99_FOR = '10m';

/** Burn-rate alert tiers: the SRE workbook's, for a 30-day compliance window. */
export const BURN_TIERS = [
  { severity: 'page', long: '1h', short: '5m', factor: 14.4, for: '2m', budgetSpent: '2% of the budget in 1h' },
  { severity: 'page', long: '6h', short: '30m', factor: 6, for: '2m', budgetSpent: '5% of the budget in 6h' },
  { severity: 'ticket', long: '1d', short: '2h', factor: 3, for: '15m', budgetSpent: '10% of the budget in 1d' },
  { severity: 'ticket', long: '3d', short: '6h', factor: 1, for: '15m', budgetSpent: '10% of the budget in 3d' },
] as const;

const UPPER: Record<SloName, string> = { ttft: 'TTFT', ttfo: 'TTFO', tpot: 'TPOT', e2e: 'E2E' };
const WHAT: Record<SloName, string> = {
  ttft: 'time to first token', ttfo: 'time to first output', tpot: 'time per output token', e2e: 'end-to-end latency',
};

/** The alert-name part of an SLO series: `TTFT`, or `TTFTPromptLe4096` for a prompt class. */
function alertPart(s: SloSeries): string {
  return UPPER[s.slo] + (s.promptTokensLe === null ? '' : `PromptLe${s.promptTokensLe}`);
}

/** "TTFT", or "TTFT (prompts up to 4096 tokens)". */
function titleOf(s: SloSeries): string {
  return UPPER[s.slo] + (s.promptTokensLe === null ? '' : ` (prompts up to ${s.promptTokensLe} tokens)`);
}

/** "time to first token", or "time to first token (prompts up to 4096 tokens)". */
function whatOf(s: SloSeries): string {
  return WHAT[s.slo] + (s.promptTokensLe === null ? '' : ` (prompts up to ${s.promptTokensLe} tokens)`);
}

export function quantileRecord(slo: SloName, q: number, scale: WindowScale): string {
  return `gen_ai_request_model:${SLO_HISTOGRAM[slo]}:p${Math.round(q * 100)}_rate${scale(QUANTILE_WINDOW)}`;
}

export function errorRatioRecord(window: string, scale: WindowScale): string {
  return `gen_ai_request_model_slo:${M.sloRequests.replace(/_total$/, '')}:error_ratio_rate${scale(window)}`;
}

/** SLO names that have a threshold anywhere in the config (default or a model). */
export function configuredSlos(slos: SloConfig): SloName[] {
  return SLO_NAMES.filter((n) => [slos.default, ...Object.values(slos.models)].some((t) => t[n] !== undefined));
}

export function quantileRules(slos: SloConfig, scale: WindowScale): Rule[] {
  const names = new Set<SloName>(['ttft', 'tpot', 'e2e', ...configuredSlos(slos)]);
  const rules: Rule[] = [];
  for (const slo of SLO_NAMES) {
    if (!names.has(slo)) continue;
    for (const q of QUANTILES) {
      rules.push({
        record: quantileRecord(slo, q, scale),
        expr: latencyQuantile(q, SLO_HISTOGRAM[slo], 'gen_ai_request_model', '', scale(QUANTILE_WINDOW)),
      });
    }
  }
  return rules;
}

export function errorRatioRules(scale: WindowScale): Rule[] {
  return STANDARD_WINDOWS.map((w) => {
    const all = `sum by (gen_ai_request_model, slo) (rate(${M.sloRequests}[${scale(w)}]))`;
    const bad = `sum by (gen_ai_request_model, slo) (rate(${M.sloRequests}{result="bad"}[${scale(w)}]))`;
    return { record: errorRatioRecord(w, scale), expr: `(\n  ${bad}\n  or\n  0 * ${all}\n)\n/\n(${all} > 0)` };
  });
}

export function burnRateAlerts(slos: SloConfig, scale: WindowScale): Rule[] {
  const budget = errorBudget(slos);
  const rules: Rule[] = [];
  for (const series of sloSeries(slos)) {
    const slo = series.label;
    for (const tier of BURN_TIERS) {
      const sel = `{slo="${slo}"}`;
      const limit = `(${tier.factor} * ${budget})`;
      rules.push({
        alert: `Infermeter${alertPart(series)}ErrorBudgetBurn`,
        expr: `${errorRatioRecord(tier.long, scale)}${sel} > ${limit}\nand\n${errorRatioRecord(tier.short, scale)}${sel} > ${limit}`,
        for: scale(tier.for),
        labels: { severity: tier.severity, slo, long_window: scale(tier.long) },
        annotations: {
          summary: `{{ $labels.gen_ai_request_model }}: ${titleOf(series)} SLO burning its error budget ${tier.factor}x too fast`,
          description:
            `{{ $value | humanizePercentage }} of {{ $labels.gen_ai_request_model }} requests missed the ${whatOf(series)} threshold over ` +
            `${scale(tier.long)}, and over ${scale(tier.short)} too: above ${tier.factor}x the error budget of ${pct(budget)} ` +
            `(${tier.budgetSpent} of a ${slos.window} window). See the overview dashboard's "why is P99 slow" row.`,
        },
      });
    }
  }
  return rules;
}

/** P99 above the threshold ⇔ more than 1% of the requests slower than it. */
const P99_SLOW_FRACTION = 0.01;

/**
 * One alert per SLO: the per-model P99 above that model's threshold, decided exactly. P99 > T
 * exactly when more than 1% of requests took longer than T, and the SLO counters count those
 * requests one by one (each model judged against its own threshold), so no histogram and no
 * interpolation is involved: the alert is as exact with native histograms (whose buckets do
 * not fall on T) as with classic ones. Failed requests are judged bad on every SLO; they are
 * taken out of both sides so that this alert, like the quantile it names, is about the
 * latency of the requests that completed. The summary quotes the recorded P99.
 */
export function p99Alerts(slos: SloConfig, scale: WindowScale): Rule[] {
  const rules: Rule[] = [];
  const w = scale(QUANTILE_WINDOW);
  const by = 'sum by (gen_ai_request_model)';
  const failedSel = `gen_ai_operation_name=~"chat|text_completion", outcome=~"${UPSTREAM_FAILURES.join('|')}"`;
  for (const series of sloSeries(slos)) {
    if (series.promptTokensLe !== null) {
      rules.push(classP99Alert(series, scale));
      continue;
    }
    const slo = series.slo;
    const judged = `${by} (rate(${M.sloRequests}{slo="${slo}"}[${w}]))`;
    const bad = `${by} (rate(${M.sloRequests}{slo="${slo}", result="bad"}[${w}]))`;
    const failed = `(${by} (rate(${M.requests}{${failedSel}}[${w}])) or 0 * ${judged})`;
    const record = quantileRecord(slo, 0.99, scale);
    rules.push({
      alert: `Infermeter${UPPER[slo]}P99High`,
      expr: `(\n  ${bad}\n  - on (gen_ai_request_model) ${failed}\n)\n/\n(\n  ${judged}\n  - on (gen_ai_request_model) ${failed}\n  > 0\n)\n> ${P99_SLOW_FRACTION}`,
      for: scale(P99_FOR),
      labels: { severity: 'warning', slo },
      annotations: {
        summary:
          `{{ $labels.gen_ai_request_model }}: ${UPPER[slo]} P99 is ` +
          `{{ with printf "${record}{gen_ai_request_model=%q}" $labels.gen_ai_request_model | query }}{{ . | first | value | humanizeDuration }}{{ end }}, ` +
          `above its SLO threshold`,
        description:
          `{{ $value | humanizePercentage }} of the completed requests of {{ $labels.gen_ai_request_model }} took longer than its ${WHAT[slo]} threshold ` +
          `over ${w} (more than 1%: its P99 is above the threshold), for ${scale(P99_FOR)}. ` +
          `See the overview dashboard's "why is P99 slow" row: KV-cache usage, waiting requests, GPU utilisation.`,
      },
    });
  }
  return rules;
}

/**
 * The P99 alert of a prompt-class SLO: more than 1% of the class's judged requests slower than
 * its threshold. Failed requests are not taken out here: the outcome counters carry no prompt
 * class, and a failed request rarely has a known prompt size (usage comes at the end), so it is
 * judged under the model's SLO, not the class's.
 */
function classP99Alert(series: SloSeries, scale: WindowScale): Rule {
  const w = scale(QUANTILE_WINDOW);
  const by = 'sum by (gen_ai_request_model)';
  const judged = `${by} (rate(${M.sloRequests}{slo="${series.label}"}[${w}]))`;
  const bad = `${by} (rate(${M.sloRequests}{slo="${series.label}", result="bad"}[${w}]))`;
  return {
    alert: `Infermeter${alertPart(series)}P99High`,
    expr: `(\n  ${bad}\n  or\n  0 * ${judged}\n)\n/\n(${judged} > 0)\n> ${P99_SLOW_FRACTION}`,
    for: scale(P99_FOR),
    labels: { severity: 'warning', slo: series.label },
    annotations: {
      summary: `{{ $labels.gen_ai_request_model }}: ${UPPER[series.slo]} P99 of prompts up to ${series.promptTokensLe} tokens is above its SLO threshold`,
      description:
        `{{ $value | humanizePercentage }} of the judged requests of {{ $labels.gen_ai_request_model }} with prompts up to ${series.promptTokensLe} tokens ` +
        `took longer than their ${WHAT[series.slo]} threshold over ${w} (more than 1%: their P99 is above it), for ${scale(P99_FOR)}. ` +
        `See the overview dashboard's "TTFT P99 by prompt class" panel.`,
    },
  };
}

function pct(x: number): string {
  return `${Number((x * 100).toPrecision(10))}%`;
}

/** A PromQL double-quoted string literal (Go escaping, which JSON's is a subset of here). */
export function promString(s: string): string {
  return JSON.stringify(s);
}
