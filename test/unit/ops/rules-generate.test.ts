import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parse } from 'yaml';
import { parseSloConfig } from '../../../src/slo/config.js';
import { generateRules, renderRules, type Rule } from '../../../src/ops/rules.js';
import { promDuration, testScale, windowSeconds } from '../../../src/slo/windows.js';

const slos = parseSloConfig(
  { objective: 0.995, default: { ttft: '2s', e2e: 60 }, models: { 'org/Model-1.5': { ttft: '4s', tpot: '150ms' } } },
  'test',
);

function rules(opts = {}): Rule[] {
  return generateRules(slos, opts).flatMap((g) => g.rules);
}

function alert(name: string, opts = {}): Rule[] {
  return rules(opts).filter((r) => r.alert === name);
}

test('quantile recording rules: P50/P95/P99 of TTFT, TPOT and E2E per model, native histogram or else classic buckets', () => {
  const rec = rules().filter((r) => r.record?.includes(':p99_'));
  const ttft = rec.find((r) => r.record === 'gen_ai_request_model:gen_ai_server_time_to_first_token_seconds:p99_rate5m');
  assert.equal(
    ttft?.expr,
    'histogram_quantile(0.99, sum by (gen_ai_request_model) (rate(gen_ai_server_time_to_first_token_seconds[5m])))\nor\n' +
      'histogram_quantile(0.99, sum by (le, gen_ai_request_model) (rate(gen_ai_server_time_to_first_token_seconds_bucket[5m])))',
  );
  for (const h of ['gen_ai_server_time_per_output_token_seconds', 'gen_ai_server_request_duration_seconds']) {
    for (const q of ['p50', 'p95', 'p99']) assert.ok(rules().some((r) => r.record === `gen_ai_request_model:${h}:${q}_rate5m`), `${h} ${q}`);
  }
});

test('error ratios over every standard window, from the exact SLO counters, guarded against 0/0', () => {
  const ratios = rules().filter((r) => r.record?.includes(':error_ratio_rate'));
  assert.deepEqual(ratios.map((r) => r.record!.split('_rate').pop()), ['5m', '30m', '1h', '2h', '6h', '1d', '3d']);
  for (const r of ratios) {
    assert.match(r.expr, /infermeter_slo_requests_total\{result="bad"\}/);
    assert.match(r.expr, /> 0\)$/);
  }
});

test('burn-rate alerts: four tiers per configured SLO, budget is 1 - objective', () => {
  const burn = alert('InfermeterTTFTErrorBudgetBurn');
  assert.deepEqual(
    burn.map((r) => [r.labels!['severity'], r.labels!['long_window']]),
    [['page', '1h'], ['page', '6h'], ['ticket', '1d'], ['ticket', '3d']],
  );
  assert.match(burn[0]!.expr, /error_ratio_rate1h\{slo="ttft"\} > \(14\.4 \* 0\.005\)\nand\n.*error_ratio_rate5m\{slo="ttft"\} > \(14\.4 \* 0\.005\)/);
  assert.match(burn[3]!.expr, /rate3d.* > \(1 \* 0\.005\)\nand\n.*rate6h/);
  // tpot is configured for one model only, ttfo nowhere.
  assert.equal(alert('InfermeterTPOTErrorBudgetBurn').length, 4);
  assert.equal(alert('InfermeterTTFOErrorBudgetBurn').length, 0);
});

test('P99 alert: exact, from the SLO counters (each model judged against its own threshold), failed requests taken out', () => {
  const [ttft] = alert('InfermeterTTFTP99High');
  const judged = 'sum by (gen_ai_request_model) (rate(infermeter_slo_requests_total{slo="ttft"}[5m]))';
  const failed = 'sum by (gen_ai_request_model) (rate(infermeter_requests_total{gen_ai_operation_name=~"chat|text_completion", outcome=~"upstream_error|stream_error|upstream_timeout|upstream_unreachable"}[5m]))';
  assert.equal(
    ttft!.expr,
    `(\n  sum by (gen_ai_request_model) (rate(infermeter_slo_requests_total{slo="ttft", result="bad"}[5m]))\n  - on (gen_ai_request_model) (${failed} or 0 * ${judged})\n)\n` +
      `/\n(\n  ${judged}\n  - on (gen_ai_request_model) (${failed} or 0 * ${judged})\n  > 0\n)\n> 0.01`,
  );
  assert.doesNotMatch(ttft!.expr, /histogram_quantile|_bucket/, 'no interpolation anywhere');
  assert.match(ttft!.annotations!['summary']!, /p99_rate5m\{gen_ai_request_model=%q\}/, 'the summary quotes the recorded P99');
  // One alert per configured SLO; ttfo is configured nowhere.
  assert.equal(alert('InfermeterTPOTP99High').length, 1);
  assert.equal(alert('InfermeterTTFOP99High').length, 0);
});

test('operational alerts are always there; without SLOs there are no SLO alerts', () => {
  const none = generateRules(parseSloConfig(undefined, 'test')).flatMap((g) => g.rules);
  const names = none.filter((r) => r.alert).map((r) => r.alert);
  assert.deepEqual(names, [
    'InfermeterUpstreamErrors', 'InfermeterStreamsStalled', 'InfermeterKVCacheFull', 'InfermeterQueueGrowing', 'InfermeterGPUTemperatureHigh',
    'InfermeterGPUPowerCapped', 'InfermeterGPUThermalViolation', 'InfermeterCollectorDown', 'InfermeterGPUDataStale',
    'InfermeterConfigReloadFailed', 'InfermeterDown', 'InfermeterTargetMissing',
    // Silent without SLOs: a model has a load ratio only once it has a threshold to break.
    'InfermeterLoadNearCapacity',
  ]);
  assert.ok(none.every((r) => !r.alert || (r.annotations?.['summary'] && r.annotations['description'] && r.labels?.['severity'])));
});

test('--job names the scrape job in the up alerts', () => {
  assert.match(alert('InfermeterDown', { job: 'llm-proxy' })[0]!.expr, /^up\{job="llm-proxy"\} == 0$/);
});

test('test windows divide every window and for: by 60 and evaluate every second', () => {
  const groups = generateRules(slos, { testWindows: true });
  assert.ok(groups.every((g) => g.interval === '1s'));
  const burn = groups.flatMap((g) => g.rules).find((r) => r.alert === 'InfermeterTTFTErrorBudgetBurn')!;
  assert.match(burn.expr, /error_ratio_rate1m\{slo="ttft"\}.*\n.*\n.*error_ratio_rate5s/);
  assert.equal(burn.for, '2s');
  assert.equal(alert('InfermeterTTFTP99High', { testWindows: true })[0]!.for, '10s');
  assert.equal(testScale('3d'), '72m');
  assert.ok(generateRules(slos).every((g) => g.interval === undefined));
});

test('durations', () => {
  assert.equal(windowSeconds('1d'), 86400);
  assert.equal(promDuration(3600), '1h');
  assert.equal(promDuration(90), '90s');
  assert.equal(promDuration(4320), '72m');
  assert.throws(() => windowSeconds('1y'), /Prometheus duration/);
});

test('renders a rule file and a PrometheusRule with the same groups', () => {
  const groups = generateRules(slos);
  const file = parse(renderRules(groups, { format: 'prometheus', generatedBy: 'x' })) as { groups: unknown };
  const cr = parse(renderRules(groups, { format: 'prometheusrule' })) as { apiVersion: string; kind: string; metadata: { name: string }; spec: { groups: unknown } };
  assert.deepEqual(file.groups, JSON.parse(JSON.stringify(groups)));
  assert.equal(cr.apiVersion, 'monitoring.coreos.com/v1');
  assert.equal(cr.kind, 'PrometheusRule');
  assert.equal(cr.metadata.name, 'infermeter');
  assert.deepEqual(cr.spec.groups, file.groups);
  assert.match(renderRules(groups, { format: 'prometheus', generatedBy: 'infermeter rules --config a.yaml' }), /^# Generated by `infermeter rules --config a.yaml`/);
});
