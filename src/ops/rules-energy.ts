/**
 * Recording rules for energy and cost per token (docs/energy.md), so dashboards divide
 * recorded rates instead of raw counters: joules and cost per output token and per good output
 * token (requests that met every SLO), per model and upstream, and each upstream's power busy
 * and idle. The denominator is infermeter_energy_output_tokens_total, the tokens of the seconds
 * already attributed, so numerator and denominator cover the same seconds.
 */
import { M } from '../slo/names.js';
import type { Rule } from './rules-types.js';
import type { WindowScale } from '../slo/windows.js';

export const ENERGY_RECORDS = {
  joulesPerToken: 'infermeter:energy_joules_per_output_token',
  joulesPerGoodToken: 'infermeter:energy_joules_per_good_output_token',
  costPerMillion: 'infermeter:cost_per_million_output_tokens',
  costPerMillionGood: 'infermeter:cost_per_million_good_output_tokens',
  watts: 'infermeter:energy_watts',
} as const;

/** Per instance (each node has its own GPUs and prices), model and upstream. */
const BY = 'instance, gen_ai_request_model, upstream';

export function energyRules(scale: WindowScale): Rule[] {
  const w = scale('5m');
  const suffix = `:rate${w}`;
  const tokens = (good: boolean) => `sum by (${BY}) (rate(${M.energyTokens}${good ? '{good="true"}' : ''}[${w}]))`;
  const joules = `sum by (${BY}) (rate(${M.energy}{state="busy"}[${w}]))`;
  const cost = `sum by (${BY}, currency) (rate(${M.cost}{gen_ai_request_model!=""}[${w}]))`;
  return [
    { record: ENERGY_RECORDS.joulesPerToken + suffix, expr: `${joules}\n/\n(${tokens(false)} > 0)` },
    { record: ENERGY_RECORDS.joulesPerGoodToken + suffix, expr: `${joules}\n/\n(${tokens(true)} > 0)` },
    { record: ENERGY_RECORDS.costPerMillion + suffix, expr: `1e6 * ${cost}\n/ ignoring (currency) group_left ()\n(${tokens(false)} > 0)` },
    { record: ENERGY_RECORDS.costPerMillionGood + suffix, expr: `1e6 * ${cost}\n/ ignoring (currency) group_left ()\n(${tokens(true)} > 0)` },
    { record: ENERGY_RECORDS.watts + suffix, expr: `sum by (instance, upstream, state) (rate(${M.energy}[${w}]))` },
  ];
}
