/**
 * The overview dashboard's headroom row (docs/headroom.md): each model's load over its
 * estimated capacity, with the alert's fraction and the break marked, and the capacity beside
 * the request rate it is compared with. A model whose capacity is unknown has no line.
 */
import type { RowSpec } from './dashboards-kit.js';
import { M } from '../slo/names.js';
import { DEFAULT_RULES_OPTIONS } from './rules-types.js';

const RI = '$__rate_interval';

/** `sel`: the dashboard's instance and model selector. */
export function headroomRow(sel: string): RowSpec {
  const alertAt = DEFAULT_RULES_OPTIONS.loadRatioAlert;
  return {
    title: 'Headroom: load against capacity',
    panels: [
      { title: 'Load ratio (request rate / capacity)', unit: 'percentunit', w: 12, min: 0, thresholds: [[alertAt, 'orange'], [1, 'red']],
        description: `Today's request rate over the rate at which the model's first P99 SLO (TTFT, TPOT or E2E) would break at today's mix. InfermeterLoadNearCapacity fires when it stays above ${alertAt * 100}%; 100% is the break. No line: the estimate is unknown (no SLO, too little load or load variation; /api/v1/status models[].capacity says why).`,
        targets: [{ expr: `max by (gen_ai_request_model) (${M.loadRatio}{${sel}})`, legend: '{{gen_ai_request_model}}' }] },
      { title: 'Capacity and request rate', unit: 'reqps', w: 12, min: 0,
        description: 'The estimated capacity (req/s where the first P99 SLO would break) beside the request rate it is compared with: the gap is the headroom.',
        targets: [
          { expr: `max by (gen_ai_request_model) (${M.capacity}{${sel}})`, legend: 'capacity {{gen_ai_request_model}}' },
          { expr: `sum by (gen_ai_request_model) (rate(${M.requests}{${sel}}[${RI}]))`, legend: 'requests {{gen_ai_request_model}}' },
        ] },
    ],
  };
}
