import { test } from 'node:test';
import assert from 'node:assert/strict';
import { REQUEST_METRICS } from '../../../src/metrics/catalog.js';
import { DEFAULT_BUCKETS } from '../../../src/lib/metric-def.js';
import { OTLP_INSTRUMENTS, instrumentSpec, prometheusNameOf, type InstrumentKey } from '../../../src/exporters/otlp/instruments.js';
import { bucketViews } from '../../../src/exporters/otlp/otlp.js';
import { resolveConfig } from '../../../src/config.js';

const KEYS = Object.keys(OTLP_INSTRUMENTS) as InstrumentKey[];
/** Config data, not request records: nothing to push. */
const NOT_EXPORTED = new Set(['infermeter_slo_threshold_seconds']);

test('the OTLP → Prometheus translation of every instrument gives back the catalog name', () => {
  for (const key of KEYS) assert.equal(prometheusNameOf(instrumentSpec(key)), OTLP_INSTRUMENTS[key].prom, key);
});

test('every request metric in the catalog has an OTLP counterpart', () => {
  const exported = new Set(KEYS.map((k) => OTLP_INSTRUMENTS[k].prom as string));
  for (const d of REQUEST_METRICS) if (!NOT_EXPORTED.has(d.name)) assert.ok(exported.has(d.name), `${d.name} has no OTLP instrument`);
});

test('GenAI semantic-convention names and units where the conventions define the metric', () => {
  const expect: Record<string, [string, string]> = {
    ttft: ['gen_ai.server.time_to_first_token', 's'],
    tpot: ['gen_ai.server.time_per_output_token', 's'],
    e2e: ['gen_ai.server.request.duration', 's'],
    tokenUsage: ['gen_ai.client.token.usage', '{token}'],
  };
  for (const [key, [name, unit]] of Object.entries(expect)) {
    const s = instrumentSpec(key as InstrumentKey);
    assert.equal(s.name, name);
    assert.equal(s.unit, unit);
    assert.equal(s.type, 'histogram');
  }
  for (const key of KEYS) {
    const { name } = instrumentSpec(key);
    assert.ok(name.startsWith('gen_ai.') || name.startsWith('infermeter.'), name);
  }
});

test('histogram views use the Prometheus buckets, SLO thresholds included', () => {
  const config = resolveConfig({ upstream: 'http://127.0.0.1:8000' }, {});
  config.buckets.ttft = [...config.buckets.ttft, 0.333].sort((a, b) => a - b);
  const views = bucketViews(config.buckets);
  const byName = new Map(views.map((v) => [v.instrumentName, v.aggregation]));
  assert.equal(views.length, KEYS.filter((k) => instrumentSpec(k).type === 'histogram').length);
  const ttft = byName.get('gen_ai.server.time_to_first_token') as { options: { boundaries: number[] } };
  assert.deepEqual(ttft.options.boundaries, config.buckets.ttft);
  assert.ok(ttft.options.boundaries.includes(0.333));
  const usage = byName.get('gen_ai.client.token.usage') as { options: { boundaries: number[] } };
  assert.deepEqual(usage.options.boundaries, DEFAULT_BUCKETS.tokens);
});
