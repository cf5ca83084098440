/** W3C traceparent parsing, the samplers and the id pool (src/proxy/trace-context.ts), table-driven. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { IdPool, TracePropagator, parseTraceparent, samplerFor, type TraceSlots } from '../../../src/proxy/trace-context.js';
import { traceSettings } from '../../../src/lib/trace-env.js';

const T = '4bf92f3577b34da6a3ce929d0e0e4736';
const S = '00f067aa0ba902b7';

const PARSE: [string | string[] | undefined, boolean | null, string][] = [
  [`00-${T}-${S}-01`, true, 'sampled'],
  [`00-${T}-${S}-00`, false, 'unsampled'],
  [`00-${T}-${S}-03`, true, 'other flag bits ignored'],
  [`01-${T}-${S}-01-extra`, true, 'a future version may append fields'],
  [`00-${T}-${S}-01-extra`, null, 'version 00 has exactly four fields'],
  [`ff-${T}-${S}-01`, null, 'version ff is invalid'],
  [`00-${'0'.repeat(32)}-${S}-01`, null, 'all-zero trace id'],
  [`00-${T}-${'0'.repeat(16)}-01`, null, 'all-zero parent id'],
  [`00-${T.toUpperCase()}-${S}-01`, null, 'uppercase hex'],
  [`00-${T}-${S}`, null, 'no flags'],
  [[`00-${T}-${S}-01`, `00-${T}-${S}-01`], null, 'two headers'],
  [`00-${T}-${S}-01, 00-${T}-${S}-01`, null, 'two values joined'],
  [undefined, null, 'absent'],
];
for (const [value, sampled, what] of PARSE) {
  test(`traceparent: ${what}`, () => {
    const ctx = parseTraceparent(value);
    if (sampled === null) assert.equal(ctx, null);
    else assert.deepEqual(ctx, { traceId: T, spanId: S, sampled });
  });
}

test('samplers: parent-based follow the parent; ratio samplers decide from the trace id alone', () => {
  const parent = { traceId: T, spanId: S, sampled: false };
  assert.equal(samplerFor('parentbased_always_on', 1)(T, parent), false);
  assert.equal(samplerFor('parentbased_always_on', 1)(T, null), true);
  assert.equal(samplerFor('parentbased_always_off', 1)(T, null), false);
  assert.equal(samplerFor('always_on', 1)(T, parent), true);
  assert.equal(samplerFor('traceidratio', 0)(T, { ...parent, sampled: true }), false);
  const pool = new IdPool(64);
  const ids = Array.from({ length: 4000 }, () => pool.traceId());
  const half = ids.filter((id) => samplerFor('traceidratio', 0.5)(id, null)).length;
  assert.ok(half > 1800 && half < 2200, `ratio 0.5 kept ${half} of 4000`);
  assert.equal(new Set(ids).size, ids.length, 'ids are unique across refills');
  assert.ok(ids.every((id) => /^[0-9a-f]{32}$/.test(id)));
});

test('the upstream traceparent names infermeter\'s span; a root drops tracestate', () => {
  const p = new TracePropagator({ sampler: 'parentbased_always_on', ratio: 1 });
  const slots: TraceSlots = { traceId: null, spanId: null, parentSpanId: null, traceFlags: 0 };
  p.start({ traceparent: `00-${T}-${S}-01` }, slots);
  const out: Record<string, string> = { tracestate: 'a=b' };
  TracePropagator.rewrite(out, slots);
  assert.equal(out['traceparent'], `00-${T}-${slots.spanId}-01`);
  assert.equal(out['tracestate'], 'a=b');
  p.start({ tracestate: 'a=b' }, slots);
  const root: Record<string, string> = { tracestate: 'a=b' };
  TracePropagator.rewrite(root, slots);
  assert.equal(slots.parentSpanId, null);
  assert.equal(root['tracestate'], undefined);
  assert.match(root['traceparent']!, /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
});

test('trace settings: off unless OTEL_TRACES_EXPORTER=otlp; bad values name the variable', () => {
  assert.equal(traceSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }), null);
  assert.deepEqual(traceSettings({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318/' }),
    { protocol: 'http/protobuf', endpoint: 'http://c:4318/v1/traces', sampler: 'parentbased_always_on', ratio: 1 });
  assert.equal(traceSettings({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'grpc' })?.endpoint, 'http://localhost:4317');
  assert.equal(traceSettings({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25' })?.ratio, 0.25);
  assert.throws(() => traceSettings({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_TRACES_SAMPLER: 'sometimes' }), /OTEL_TRACES_SAMPLER/);
  assert.throws(() => traceSettings({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '2' }), /OTEL_TRACES_SAMPLER_ARG/);
});
