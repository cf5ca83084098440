/**
 * --classic-histograms=false: the five latency histograms that are native too lose their
 * classic buckets (only +Inf, _sum and _count stay in the text exposition) and keep their
 * native buckets in the protobuf one; the classic-only histograms (token counts, breakdowns)
 * keep theirs. The series it saves are measured on the worst case of series-count.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { RequestMetrics, nativeOptions } from '../../../src/metrics/prometheus.js';
import { judgeBatch } from '../../../src/metrics/batch.js';
import { DEFAULT_BUCKETS } from '../../../src/lib/metric-def.js';
import { decodeMetricFamilies, encodeRegistry } from '../../../src/exporters/prometheus/proto.js';
import { countSeries, NO_SLOS, total } from '../../../src/metrics/series-count.js';
import { UNMEASURED } from '../../../src/record/record.js';
import { DEFAULT_IN_FLIGHT_BANDS, DEFAULT_PROMPT_CLASSES } from '../../../src/metrics/breakdown.js';
import { resolveConfig } from '../../../src/config.js';

const NATIVE = ['gen_ai_server_time_to_first_token_seconds', 'infermeter_time_to_first_output_seconds', 'gen_ai_server_time_per_output_token_seconds', 'gen_ai_server_request_duration_seconds', 'infermeter_inter_chunk_latency_seconds'];

function metrics(classicHistograms: boolean): Registry {
  const registry = new Registry();
  const m = new RequestMetrics(registry, DEFAULT_BUCKETS as Record<keyof typeof DEFAULT_BUCKETS, number[]>, 'vllm', NO_SLOS, nativeOptions(), null, {
    promptTokensClasses: [...DEFAULT_PROMPT_CLASSES], inFlightBands: [...DEFAULT_IN_FLIGHT_BANDS], tenantFrom: 'none', tenantLimit: 20, tenantHistograms: false, classicHistograms,
  });
  for (const ttft of [0.05, 0.3, 1.2]) {
    m.ingest(judgeBatch([{
      ...UNMEASURED, route: 'chat_completions', operation: 'chat', model: 'm', outcome: 'ok', status: 200, streamed: true, errorType: null, startedAt: 0, tenant: null,
      ttft, ttfo: ttft, e2e: ttft + 2, outputTokens: 40, tokenSource: 'usage', inputTokens: 100, inputTokensKnown: true, inFlightAtFirstToken: 1, chunkGaps: new Float32Array([0.02, 0.03]),
    }], 0, NO_SLOS, (x) => x));
  }
  return registry;
}

const bucketLines = (text: string, name: string) => text.split('\n').filter((l) => l.startsWith(`${name}_bucket{`));

test('off: the native latency histograms keep +Inf, _sum and _count in text, and their native buckets in protobuf', async () => {
  const on = await metrics(true).metrics();
  const offRegistry = metrics(false);
  const off = await offRegistry.metrics();
  for (const name of NATIVE) {
    assert.ok(bucketLines(on, name).length > 5, `${name}: classic buckets by default`);
    assert.deepEqual(bucketLines(off, name).map((l) => /le="([^"]+)"/.exec(l)![1]), ['+Inf'], `${name}: only +Inf when off`);
    assert.match(off, new RegExp(`^${name}_count\\{[^}]*\\} ${name === 'infermeter_inter_chunk_latency_seconds' ? 6 : 3}$`, 'm'));
    assert.match(off, new RegExp(`^${name}_sum\\{`, 'm'));
  }
  // Classic-only histograms keep their buckets.
  assert.ok(bucketLines(off, 'gen_ai_client_token_usage').length > 5);
  assert.ok(bucketLines(off, 'infermeter_time_to_first_token_by_prompt_seconds').length > 5);

  const families = decodeMetricFamilies(await encodeRegistry(offRegistry));
  const ttft = families.find((f) => f.name === 'gen_ai_server_time_to_first_token_seconds')!.metric[0]!.histogram!;
  assert.equal(ttft.sample_count, 3);
  assert.deepEqual(ttft.bucket ?? [], [], 'no classic buckets in protobuf');
  assert.equal(typeof ttft.schema, 'number', 'the native histogram is there');
  assert.equal((ttft.positive_delta ?? []).length > 0, true);
});

test('the flag parses, defaults to true, and the series it saves are measured', async () => {
  assert.equal(resolveConfig({ upstream: 'http://127.0.0.1:8000' }, {}).classicHistograms, true);
  assert.equal(resolveConfig({ upstream: 'http://127.0.0.1:8000', classicHistograms: 'false' }, {}).classicHistograms, false);
  assert.throws(() => resolveConfig({ upstream: 'http://127.0.0.1:8000', classicHistograms: 'maybe' }, {}), /--classic-histograms/);
  const on = total(await countSeries({ models: 1, tenants: 0, slos: NO_SLOS }));
  const off = total(await countSeries({ models: 1, tenants: 0, slos: NO_SLOS, classicHistograms: false }));
  assert.ok(off < on, `${off} < ${on}`);
});
