/**
 * SLO rules from the SLO config: latency quantiles per model, exact SLO error ratios over
 * the standard windows, multi-window multi-burn-rate alerts (Google SRE workbook, ch. 5)
 * on those ratios, and a direct "P99 above threshold" alert per SLO.
 *
 * Every ratio is guarded: with no judged requests in a window the denominator is filtered
 * out (`> 0`) and the ratio has no sample, so no alert can fire on an idle service; with
 * requests but no bad ones the ratio is 0, not missing (dashboards show a flat line).
 */
import { SLO_NAMES, type SloConfig, type SloName } from './config.js';
import { M, SLO_HISTOGRAM } from './names.js';
import type { Rule } from './rules-types.js';
import { STANDARD_WINDOWS, type WindowScale } from './windows.js';

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

/** 1 − objective without float noise (1 − 0.99 is 0.010000000000000009). */
export function errorBudget(slos: SloConfig): number {
  return Number((1 - slos.objective).toPrecision(12));
}

export function quantileRules(slos: SloConfig, scale: WindowScale): Rule[] {
  const names = new Set<SloName>(['ttft', 'tpot', 'e2e', ...configuredSlos(slos)]);
  const rules: Rule[] = [];
  for (const slo of SLO_NAMES) {
    if (!names.has(slo)) continue;
    for (const q of QUANTILES) {
      rules.push({
        record: quantileRecord(slo, q, scale),
        expr: `histogram_quantile(${q}, sum by (le, gen_ai_request_model) (rate(${SLO_HISTOGRAM[slo]}_bucket[${scale(QUANTILE_WINDOW)}])))`,
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
  for (const slo of configuredSlos(slos)) {
    for (const tier of BURN_TIERS) {
      const sel = `{slo="${slo}"}`;
      const limit = `(${tier.factor} * ${budget})`;
      rules.push({
        alert: `Infermeter${UPPER[slo]}ErrorBudgetBurn`,
        expr: `${errorRatioRecord(tier.long, scale)}${sel} > ${limit}\nand\n${errorRatioRecord(tier.short, scale)}${sel} > ${limit}`,
        for: scale(tier.for),
        labels: { severity: tier.severity, slo, long_window: scale(tier.long) },
        annotations: {
          summary: `{{ $labels.gen_ai_request_model }}: ${UPPER[slo]} SLO burning its error budget ${tier.factor}x too fast`,
          description:
            `{{ $value | humanizePercentage }} of {{ $labels.gen_ai_request_model }} requests missed the ${WHAT[slo]} threshold over ` +
            `${scale(tier.long)}, and over ${scale(tier.short)} too: above ${tier.factor}x the error budget of ${pct(budget)} ` +
            `(${tier.budgetSpent} of a ${slos.window} window). See the overview dashboard's "why is P99 slow" row.`,
        },
      });
    }
  }
  return rules;
}

/**
 * One alert per SLO: the per-model P99 above that model's threshold. Thresholds are
 * written into the expression from the config (a model's own over the default), so the
 * alert does not depend on a scraped threshold gauge.
 */
export function p99Alerts(slos: SloConfig, scale: WindowScale): Rule[] {
  const rules: Rule[] = [];
  const models = Object.keys(slos.models).sort();
  for (const slo of configuredSlos(slos)) {
    const record = quantileRecord(slo, 0.99, scale);
    const clauses: string[] = [];
    for (const model of models) {
      const limit = slos.models[model]![slo] ?? slos.default[slo];
      if (limit !== undefined) clauses.push(`${record}{gen_ai_request_model=${promString(model)}} > ${limit}`);
    }
    const limit = slos.default[slo];
    if (limit !== undefined) {
      const others = models.length ? `{gen_ai_request_model!~${promString(models.map(escapeRegex).join('|'))}}` : '';
      clauses.push(`${record}${others} > ${limit}`);
    }
    rules.push({
      alert: `Infermeter${UPPER[slo]}P99High`,
      expr: clauses.join('\nor\n'),
      for: scale(P99_FOR),
      labels: { severity: 'warning', slo },
      annotations: {
        summary: `{{ $labels.gen_ai_request_model }}: ${UPPER[slo]} P99 is {{ $value | humanizeDuration }}, above its SLO threshold`,
        description:
          `The P99 ${WHAT[slo]} of {{ $labels.gen_ai_request_model }} has been above its threshold for ${scale(P99_FOR)}. ` +
          `See the overview dashboard's "why is P99 slow" row: KV-cache usage, waiting requests, GPU utilisation.`,
      },
    });
  }
  return rules;
}

function pct(x: number): string {
  return `${Number((x * 100).toPrecision(10))}%`;
}

/** A PromQL double-quoted string literal (Go escaping, which JSON's is a subset of here). */
export function promString(s: string): string {
  return JSON.stringify(s);
}

function escapeRegex(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
