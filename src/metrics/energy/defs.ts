/**
 * The energy and cost families (metrics/catalog.ts lists them; docs/energy.md defines them).
 * Bounded by construction: the model label's values (models.ts) times the configured upstreams,
 * plus one idle series per upstream with an empty model.
 */
import type { MetricDef } from '../../lib/metric-def.js';

export const ENERGY_METRIC = 'infermeter_energy_joules_total';
export const COST_METRIC = 'infermeter_cost_total';
export const ENERGY_TOKENS_METRIC = 'infermeter_energy_output_tokens_total';

export const ENERGY_METRICS = [
  { name: ENERGY_METRIC, type: 'counter', unit: 'J', labels: ['gen_ai_request_model', 'upstream', 'state'], source: 'slo',
    help: 'GPU energy attributed to each model: each GPU\'s energy (infermeter_gpu_energy_joules_total) goes to the upstream it serves (infermeter_gpu_engine_info), then to that upstream\'s models by their share of its work each second (prompts the share their prefill needed at --energy-prefill-rate, output tokens the rest), state busy; a second in which the upstream had no request in flight is state idle, with an empty model. Counted once each second is complete (every request in flight during it has ended).' },
  { name: COST_METRIC, type: 'counter', unit: '1', labels: ['gen_ai_request_model', 'upstream', 'kind', 'currency'], source: 'slo',
    help: 'What the attributed energy and GPU time cost, in currency: kind energy (joules at --energy-price per kWh) and gpu_time (GPU-seconds at --gpu-hour-cost per GPU-hour), per upstream where its upstreams: entry sets its own; split between models as the energy is, idle with an empty model. Only kinds with a price have series.' },
  { name: ENERGY_TOKENS_METRIC, type: 'counter', unit: '{token}', labels: ['gen_ai_request_model', 'upstream', 'good'], source: 'slo',
    help: 'Output tokens of the seconds whose energy has been attributed (the denominator of energy and cost per token, counted with them): good="true" for requests that met every SLO that applies, "false" for the rest.' },
] as const satisfies readonly MetricDef[];
