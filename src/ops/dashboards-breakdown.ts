/**
 * The overview dashboard's breakdown row (issue 17): TTFT by prompt class, TPOT by concurrency
 * band (single-stream against concurrent latency in one panel), tenants' traffic and SLO
 * attainment, and the share of input tokens served from the prefix cache.
 */
import { guardedRatio, type PanelSpec, type RowSpec } from './dashboards-kit.js';
import { M } from '../slo/names.js';
import { classicQuantile } from '../slo/quantile.js';

const RI = '$__rate_interval';

/** `sel`: the dashboard's instance and model selector. */
export function breakdownRow(sel: string): RowSpec {
  const rate = (metric: string, by: string, extra = '') => `sum by (${by}) (rate(${metric}{${sel}${extra}}[${RI}]))`;
  const panels: PanelSpec[] = [
    { title: 'TTFT P99 by prompt class', unit: 's', w: 12,
      description: 'Time to first token, 99th percentile, by prompt_tokens_le: the upper bound of the prompt-length class (usage.prompt_tokens), or unknown. Prefill grows with the prompt: a P99 that rises only in the top class is long prompts, not a slow service.',
      targets: [{ expr: classicQuantile(0.99, M.ttftByPrompt, 'prompt_tokens_le', sel, RI), legend: 'P99 prompt ≤ {{prompt_tokens_le}} tokens' }] },
    { title: 'TPOT P50 by concurrency band', unit: 's', w: 12,
      description: 'Time per output token, median, by in_flight_le: the generation requests in flight on the machine when the request\'s first token arrived. Band 1 is single-stream latency; the higher bands show what the same model does under concurrent load (a single-stream TPOT of 30 ms does not mean 30 ms at 32 streams).',
      targets: [{ expr: classicQuantile(0.5, M.tpotByConcurrency, 'in_flight_le', sel, RI), legend: 'P50 at ≤ {{in_flight_le}} in flight' }] },
    { title: 'Requests per second by tenant', unit: 'reqps', w: 8,
      description: 'Every forwarded request by tenant (--tenant-header or --tenant-from api-key; the first --tenant-limit tenants seen, then other). One unlabelled line when tenants are off.',
      targets: [{ expr: rate(M.requests, 'tenant'), legend: '{{tenant}}' }] },
    { title: 'SLO attainment by tenant (dashboard range)', unit: 'percentunit', type: 'bargauge', w: 8, min: 0, max: 1,
      description: 'Share of each tenant\'s judged requests that met each SLO over the time range shown.',
      targets: [{ expr: `1 - (${guardedRatio(`sum by (tenant, slo) (increase(${M.sloRequests}{${sel}, result="bad"}[$__range]))`, `sum by (tenant, slo) (increase(${M.sloRequests}{${sel}}[$__range]))`)})`, legend: '{{tenant}} {{slo}}' }] },
    { title: 'Cached-token ratio', unit: 'percentunit', w: 8, min: 0, max: 1,
      description: 'Share of input tokens the server served from its prefix cache (usage.prompt_tokens_details.cached_tokens; vLLM reports it with --enable-prompt-tokens-details). 0 when the server does not report it.',
      targets: [{ expr: guardedRatio(rate(M.tokens, 'gen_ai_request_model', ', gen_ai_token_type="cached_input"'), rate(M.tokens, 'gen_ai_request_model', ', gen_ai_token_type="input"')), legend: '{{gen_ai_request_model}}' }] },
  ];
  return { title: 'Breakdowns: prompt length, concurrency, tenants, cache', panels };
}
