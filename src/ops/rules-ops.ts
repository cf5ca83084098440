/**
 * Operational alerts: the inference server failing requests, the engine over capacity, the
 * GPU too hot or power-capped, a collector or infermeter itself gone dark.
 *
 * Silence on absence is deliberate: every expression here needs a series to exist, so a
 * Prometheus that never scraped an infermeter (or a node without GPUs) stays quiet. The
 * one alert about a missing target, InfermeterTargetMissing, fires only when the target
 * was scraped within the last day and has vanished since; a target that service discovery
 * never found is a deployment mistake no rule can tell from "not deployed here".
 */
import { GPU_COLLECTOR, M } from '../slo/names.js';
import { UPSTREAM_FAILURES } from '../record/record.js';
import { promString } from './rules-slo.js';
import type { Rule, RulesOptions } from './rules-types.js';
import type { WindowScale } from '../slo/windows.js';

export const OPS_LIMITS = {
  upstreamErrorRatio: 0.05,
  kvCacheRatio: 0.95,
  waitingRequests: 1,
  gpuTemperatureCelsius: 85,
  gpuViolationRatio: 0.1,
  staleSeconds: 60,
} as const;

export function opsAlerts(opts: RulesOptions, scale: WindowScale): Rule[] {
  const w5 = scale('5m');
  const w10 = scale('10m');
  const failed = `${M.requests}{outcome=~"${UPSTREAM_FAILURES.join('|')}"}`;
  const up = `up{job=${promString(opts.job)}}`;
  return [
    {
      alert: 'InfermeterUpstreamErrors',
      expr:
        `sum by (job, instance) (rate(${failed}[${w5}]))\n/\n(sum by (job, instance) (rate(${M.requests}[${w5}])) > 0)\n> ${OPS_LIMITS.upstreamErrorRatio}`,
      for: scale('5m'),
      labels: { severity: 'page' },
      annotations: {
        summary: '{{ $labels.instance }}: {{ $value | humanizePercentage }} of requests fail at the inference server',
        description:
          `More than ${OPS_LIMITS.upstreamErrorRatio * 100}% of requests through {{ $labels.instance }} ended in ${UPSTREAM_FAILURES.slice(0, -1).join(', ')} ` +
          `or ${UPSTREAM_FAILURES.at(-1)} over ${w5}. Check the inference server's logs and health; ` +
          `infermeter_requests_total by outcome shows which failure dominates.`,
      },
    },
    {
      // A stalled stream is a user who waited out --idle-timeout for nothing: one is worth a look.
      alert: 'InfermeterStreamsStalled',
      expr: `sum by (job, instance, gen_ai_request_model) (increase(${M.streamEndings}{ending="stalled"}[${w10}])) > 0`,
      labels: { severity: 'warning' },
      annotations: {
        summary: '{{ $labels.instance }}: {{ $value | printf "%.0f" }} streams of {{ $labels.gen_ai_request_model }} stalled',
        description:
          `Streams of {{ $labels.gen_ai_request_model }} through {{ $labels.instance }} went silent until infermeter cut them over the last ${w10} ` +
          '(no upstream byte for --idle-timeout, or no headers for --headers-timeout). infermeter_streams_silent shows streams silent now; ' +
          'infermeter_longest_silence_seconds by phase says where streams wait (before_first_token: queue or prefill; tool_call: a parser holding a call back).',
      },
    },
    {
      alert: 'InfermeterKVCacheFull',
      expr: `max by (job, instance, engine) (${M.kvCache}) > ${OPS_LIMITS.kvCacheRatio}`,
      for: scale('10m'),
      labels: { severity: 'warning' },
      annotations: {
        summary: '{{ $labels.instance }}: {{ $labels.engine }} KV cache {{ $value | humanizePercentage }} full',
        description:
          `The engine's KV cache has stayed above ${OPS_LIMITS.kvCacheRatio * 100}% for ${scale('10m')}: new requests queue and running ones ` +
          'get preempted, so TTFT rises. Add capacity, lower max_num_seqs/max_model_len, or shed load.',
      },
    },
    {
      alert: 'InfermeterQueueGrowing',
      expr: `deriv(${M.waiting}[${w10}]) * 60 > 0\nand\nmin_over_time(${M.waiting}[${w10}]) >= ${OPS_LIMITS.waitingRequests}`,
      for: scale('10m'),
      labels: { severity: 'warning' },
      annotations: {
        summary: '{{ $labels.instance }}: {{ $labels.engine }} waiting queue keeps growing',
        description:
          `Requests have waited in the engine's queue for the whole of the last ${w10} and the queue is still growing ` +
          `(by {{ $value | printf "%.1f" }} requests a minute): arrivals exceed what the server can batch. Expect TTFT to climb.`,
      },
    },
    {
      alert: 'InfermeterGPUTemperatureHigh',
      expr: `${M.gpuTemp} > ${OPS_LIMITS.gpuTemperatureCelsius}`,
      for: scale('5m'),
      labels: { severity: 'warning' },
      annotations: {
        summary: '{{ $labels.instance }}: GPU {{ $labels.gpu }} at {{ $value }}°C',
        description:
          `GPU {{ $labels.gpu }} ({{ $labels.uuid }}) has been above ${OPS_LIMITS.gpuTemperatureCelsius}°C for ${scale('5m')}; ` +
          'clocks will be thermally throttled. Check cooling and airflow.',
      },
    },
    {
      alert: 'InfermeterGPUPowerCapped',
      expr: `avg_over_time(${M.gpuPowerViolation}[${w10}]) > ${OPS_LIMITS.gpuViolationRatio}`,
      for: scale('5m'),
      labels: { severity: 'warning' },
      annotations: {
        summary: '{{ $labels.instance }}: GPU {{ $labels.gpu }} power-capped {{ $value | humanizePercentage }} of the time',
        description:
          'nvidia-smi reports GPU {{ $labels.gpu }} ({{ $labels.uuid }}) held back by its power limit for more than ' +
          `${OPS_LIMITS.gpuViolationRatio * 100}% of the last ${w10}, for ${scale('5m')}; expect lower clocks and slower tokens.`,
      },
    },
    {
      alert: 'InfermeterGPUThermalViolation',
      expr: `avg_over_time(${M.gpuThermalViolation}[${w10}]) > ${OPS_LIMITS.gpuViolationRatio}`,
      for: scale('5m'),
      labels: { severity: 'warning' },
      annotations: {
        summary: '{{ $labels.instance }}: GPU {{ $labels.gpu }} thermally throttled {{ $value | humanizePercentage }} of the time',
        description:
          'nvidia-smi reports GPU {{ $labels.gpu }} ({{ $labels.uuid }}) slowed by its thermal limit for more than ' +
          `${OPS_LIMITS.gpuViolationRatio * 100}% of the last ${w10}, for ${scale('5m')}. Check cooling.`,
      },
    },
    {
      alert: 'InfermeterCollectorDown',
      expr: `${M.collectorUp} == 0`,
      for: scale('5m'),
      labels: { severity: 'warning' },
      annotations: {
        summary: '{{ $labels.instance }}: infermeter collector {{ $labels.collector }} failing',
        description:
          `The {{ $labels.collector }} collector's runs have failed for ${scale('5m')}; its gauges are missing or stale. ` +
          'infermeter logs the cause once (warn "collector failed"); infermeter_collector_errors_total says which kind.',
      },
    },
    {
      alert: 'InfermeterGPUDataStale',
      expr: `time() - ${M.collectorLastSuccess}{collector="${GPU_COLLECTOR}"} > ${OPS_LIMITS.staleSeconds}`,
      for: scale('2m'),
      labels: { severity: 'warning' },
      annotations: {
        summary: '{{ $labels.instance }}: no fresh nvidia-smi data for {{ $value | humanizeDuration }}',
        description:
          `The GPU collector last succeeded {{ $value | humanizeDuration }} ago (limit ${OPS_LIMITS.staleSeconds}s): nvidia-smi ` +
          'may be hung (driver trouble, Xid errors). Run nvidia-smi by hand on the node; GPU panels are showing old or no data.',
      },
    },
    {
      alert: 'InfermeterConfigReloadFailed',
      expr: `${M.configReloadSuccessful} == 0`,
      for: scale('10m'),
      labels: { severity: 'warning' },
      annotations: {
        summary: '{{ $labels.instance }}: the last config reload failed',
        description:
          `The config file infermeter was asked to reload (SIGHUP or POST /-/reload) has been invalid for ${scale('10m')}: ` +
          'it keeps running on its previous config, and the next restart would fail the same way. Its error log line (msg "config reload failed") says what is wrong.',
      },
    },
    {
      alert: 'InfermeterDown',
      expr: `${up} == 0`,
      for: scale('2m'),
      labels: { severity: 'page' },
      annotations: {
        summary: '{{ $labels.instance }}: Prometheus cannot scrape infermeter',
        description:
          `Scrapes of {{ $labels.instance }} (job ${opts.job}) have failed for ${scale('2m')}: the daemon is down or its metrics ` +
          'listener unreachable. No latency, SLO or GPU alert can fire for this instance while it lasts.',
      },
    },
    {
      alert: 'InfermeterTargetMissing',
      expr: `absent(${up})\nand on ()\ncount(present_over_time(${up}[${scale('1d')}])) > 0`,
      for: scale('10m'),
      labels: { severity: 'page' },
      annotations: {
        summary: `No infermeter target (job ${opts.job}) is being scraped any more`,
        description:
          `Prometheus scraped job ${opts.job} within the last ${scale('1d')} but has had no such target for ${scale('10m')}: ` +
          'service discovery lost it (pod deleted, relabelling or ServiceMonitor changed). Every infermeter alert is blind meanwhile.',
      },
    },
  ];
}
