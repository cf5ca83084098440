/**
 * The overview dashboard's energy row (docs/energy.md): joules and cost per output token per
 * model, over all tokens and over good tokens, from the recording rules of rules-energy.ts (so
 * the panels divide recorded rates, not raw counters), and each upstream's power, busy and idle.
 */
import type { PanelSpec, RowSpec } from './dashboards-kit.js';
import { ENERGY_RECORDS } from './rules-energy.js';

/** `sel`: the dashboard's instance and model selector; `instance`: its instance selector. */
export function energyRow(sel: string, instance: string): RowSpec {
  const rec = (name: string) => `${name}:rate5m`;
  const panels: PanelSpec[] = [
    { title: 'Energy per output token', unit: 'J', w: 8,
      description: 'GPU joules per output token per model over 5 minutes: each GPU\'s energy goes to the upstream it serves, then to that upstream\'s models by their share of its work each second; idle seconds are kept apart (docs/energy.md). "good": per token of requests that met every SLO, what goodput costs.',
      targets: [
        { expr: `${rec(ENERGY_RECORDS.joulesPerToken)}{${sel}}`, legend: '{{gen_ai_request_model}} ({{upstream}})' },
        { expr: `${rec(ENERGY_RECORDS.joulesPerGoodToken)}{${sel}}`, legend: 'good {{gen_ai_request_model}} ({{upstream}})' },
      ] },
    { title: 'Cost per million output tokens', unit: 'short', w: 8,
      description: 'GPU time (--gpu-hour-cost) and energy (--energy-price) per million output tokens per model, in the currency label, over 5 minutes; "good": per million tokens of requests that met every SLO. Empty without a price.',
      targets: [
        { expr: `${rec(ENERGY_RECORDS.costPerMillion)}{${sel}}`, legend: '{{gen_ai_request_model}} ({{upstream}}) {{currency}}' },
        { expr: `${rec(ENERGY_RECORDS.costPerMillionGood)}{${sel}}`, legend: 'good {{gen_ai_request_model}} ({{upstream}}) {{currency}}' },
      ] },
    { title: 'Power per upstream, busy and idle', unit: 'watt', w: 8,
      description: 'Mean GPU power of each upstream\'s GPUs over 5 minutes, split into seconds with a request in flight (busy) and without (idle). Idle power is never spread over tokens.',
      targets: [{ expr: `${rec(ENERGY_RECORDS.watts)}{${instance}}`, legend: '{{upstream}} {{state}}' }] },
  ];
  return { title: 'Energy and cost per token', panels };
}
