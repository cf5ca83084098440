/**
 * The alert before the breach (docs/headroom.md): a model's load has stayed above a set
 * share of its estimated capacity (infermeter_load_ratio, metrics/headroom/), so its first
 * P99 SLO will break if the load grows by the rest. The burn-rate alerts (rules-slo.ts) fire
 * once it has. A model whose capacity is unknown has no load-ratio series and stays silent.
 */
import { M } from '../slo/names.js';
import type { Rule, RulesOptions } from './rules-types.js';
import type { WindowScale } from '../slo/windows.js';

/** How long the load ratio must stay above the fraction: a burst between two estimates is not headroom gone. */
export const LOAD_RATIO_FOR = '10m';

export function headroomAlerts(opts: RulesOptions, scale: WindowScale): Rule[] {
  const pct = `${Math.round(opts.loadRatioAlert * 100)}%`;
  return [
    {
      alert: 'InfermeterLoadNearCapacity',
      expr: `max by (job, instance, gen_ai_request_model) (${M.loadRatio}) > ${opts.loadRatioAlert}`,
      for: scale(LOAD_RATIO_FOR),
      labels: { severity: 'warning' },
      annotations: {
        summary: '{{ $labels.instance }}: {{ $labels.gen_ai_request_model }} runs at {{ $value | humanizePercentage }} of its capacity',
        description:
          `The request rate of {{ $labels.gen_ai_request_model }} has stayed above ${pct} of the rate at which its first P99 SLO would break ` +
          `(infermeter_capacity_requests_per_second) for ${scale(LOAD_RATIO_FOR)}. Add replicas or shed load before it does; ` +
          '/api/v1/status models[].capacity names the SLO and the limit that bind.',
      },
    },
  ];
}
