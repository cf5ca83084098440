/**
 * The Prometheus protobuf exposition: length-delimited io.prometheus.client.MetricFamily
 * messages (schemas/prometheus/metrics.proto, client_model's schema), one per metric of the
 * registry. Counters, gauges and classic histograms come from prom-client's JSON view; a
 * histogram with native series (native-store.ts) carries its native buckets beside the
 * classic ones, so a Prometheus that keeps both (2.45+ scrape_classic_histograms, 3.x
 * always_scrape_classic_histograms) still answers classic `_bucket` queries.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type * as Protobuf from 'protobufjs';
import type { MetricObjectWithValues, MetricValue, MetricValueWithName, Registry } from 'prom-client';
import { labelKey, nativeHistogramsOf, type NativeHistograms } from '../../metrics/native-store.js';

export const PROTOBUF_CONTENT_TYPE = 'application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited';

/** The schema file, in the repo and in the installed package alike (dist/src/exporters/prometheus → root). */
export const METRICS_PROTO_PATH = new URL('../../../../schemas/prometheus/metrics.proto', import.meta.url);

const require = createRequire(import.meta.url);
let loaded: typeof Protobuf | undefined;
/**
 * protobufjs, loaded on the first protobuf scrape: most scrapers never ask for it, and the
 * metrics thread starts (and /readyz answers) sooner without it.
 */
function pb(): typeof Protobuf {
  return (loaded ??= require('protobufjs') as typeof Protobuf);
}

/** Parses metrics.proto (with google.protobuf.Timestamp from protobufjs' bundled copy). */
export function loadMetricsProto(path: URL | string = METRICS_PROTO_PATH): Protobuf.Root {
  const protobuf = pb();
  const root = new protobuf.Root();
  root.addJSON(protobuf.common.get('google/protobuf/timestamp.proto')!.nested!);
  protobuf.parse(readFileSync(path, 'utf8'), root, { keepCase: true });
  root.resolveAll();
  return root;
}

const TYPE = { counter: 0, gauge: 1, summary: 2, untyped: 3, histogram: 4 } as const;

let metricFamily: Protobuf.Type | undefined;
function metricFamilyType(): Protobuf.Type {
  return (metricFamily ??= loadMetricsProto().lookupType('io.prometheus.client.MetricFamily'));
}

interface LabelPair { name: string; value: string }
type Json = MetricObjectWithValues<MetricValue<string> | MetricValueWithName<string>>;

/** Every metric of `registry`, encoded. */
export async function encodeRegistry(registry: Registry): Promise<Buffer> {
  const families = (await registry.getMetricsAsJSON()) as Json[];
  const natives = nativeHistogramsOf(registry);
  const type = metricFamilyType();
  const writer = pb().Writer.create();
  for (const f of families) {
    const message = familyMessage(f, natives);
    if (message) type.encodeDelimited(message, writer);
  }
  return Buffer.from(writer.finish());
}

function familyMessage(f: Json, natives: NativeHistograms | undefined): Record<string, unknown> | null {
  const base = { name: f.name, help: f.help };
  switch (String(f.type)) {
    case 'counter':
      return { ...base, type: TYPE.counter, metric: f.values.map((v) => ({ label: pairs(v.labels), counter: { value: v.value } })) };
    case 'gauge':
      return { ...base, type: TYPE.gauge, metric: f.values.map((v) => ({ label: pairs(v.labels), gauge: { value: v.value } })) };
    case 'histogram':
      return { ...base, type: TYPE.histogram, metric: histogramMetrics(f, natives) };
    case 'summary':
      return { ...base, type: TYPE.summary, metric: summaryMetrics(f) };
    default:
      return null;
  }
}

interface ProtoExemplar { label: LabelPair[]; value: number; timestamp: { seconds: number; nanos: number } }

function protoExemplar(traceId: string, value: number, timestamp: number): ProtoExemplar {
  const seconds = Math.floor(timestamp);
  return { label: [{ name: 'trace_id', value: traceId }], value, timestamp: { seconds, nanos: Math.round((timestamp - seconds) * 1e9) } };
}

interface Grouped {
  labels: Record<string, string | number>;
  buckets: { upper_bound: number; cumulative_count: number; exemplar?: ProtoExemplar }[];
  sum: number;
  count: number;
}

/** prom-client's flat samples (`_bucket` with `le`, `_sum`, `_count`) back into one entry per series. */
function group(f: Json): Map<string, Grouped> {
  const out = new Map<string, Grouped>();
  for (const v of f.values as MetricValueWithName<string>[]) {
    const key = labelKey(v.labels);
    let g = out.get(key);
    if (!g) {
      const { le: _le, ...labels } = v.labels as Record<string, string | number>;
      out.set(key, (g = { labels, buckets: [], sum: 0, count: 0 }));
    }
    if (v.metricName?.endsWith('_bucket')) {
      const le = v.labels['le'];
      // +Inf is implied by sample_count (the schema makes it optional).
      const ex = (v as { exemplar?: { labelSet: { trace_id: string }; value: number; timestamp: number } | null }).exemplar;
      const exemplar = ex ? protoExemplar(ex.labelSet.trace_id, ex.value, ex.timestamp) : undefined;
      if (le !== '+Inf') g.buckets.push({ upper_bound: Number(le), cumulative_count: v.value, ...(exemplar && { exemplar }) });
    } else if (v.metricName?.endsWith('_sum')) g.sum = v.value;
    else if (v.metricName?.endsWith('_count')) g.count = v.value;
  }
  return out;
}

function histogramMetrics(f: Json, natives: NativeHistograms | undefined): Record<string, unknown>[] {
  const metrics: Record<string, unknown>[] = [];
  for (const g of group(f).values()) {
    const histogram: Record<string, unknown> = { sample_count: g.count, sample_sum: g.sum, bucket: g.buckets };
    const series = natives?.lookup(f.name, g.labels);
    const native = series?.snapshot();
    if (series?.exemplars) histogram['exemplars'] = series.exemplars.map((e) => protoExemplar(e.traceId, e.value, e.timestamp));
    if (native) {
      Object.assign(histogram, {
        schema: native.schema,
        zero_threshold: native.zeroThreshold,
        zero_count: native.zeroCount,
        positive_span: native.positiveSpans,
        positive_delta: native.positiveDeltas,
        negative_span: native.negativeSpans,
        negative_delta: native.negativeDeltas,
      });
    }
    metrics.push({ label: pairs(g.labels), histogram });
  }
  return metrics;
}

function summaryMetrics(f: Json): Record<string, unknown>[] {
  const bySeries = new Map<string, { labels: Record<string, string | number>; quantile: { quantile: number; value: number }[]; sum: number; count: number }>();
  for (const v of f.values as MetricValueWithName<string>[]) {
    const { quantile, ...labels } = v.labels as Record<string, string | number>;
    const key = labelKey(labels);
    let s = bySeries.get(key);
    if (!s) bySeries.set(key, (s = { labels, quantile: [], sum: 0, count: 0 }));
    if (v.metricName?.endsWith('_sum')) s.sum = v.value;
    else if (v.metricName?.endsWith('_count')) s.count = v.value;
    else if (quantile !== undefined) s.quantile.push({ quantile: Number(quantile), value: v.value });
  }
  return [...bySeries.values()].map((s) => ({ label: pairs(s.labels), summary: { sample_count: s.count, sample_sum: s.sum, quantile: s.quantile } }));
}

function pairs(labels: Partial<Record<string, string | number>> | undefined): LabelPair[] {
  const out: LabelPair[] = [];
  for (const name of Object.keys(labels ?? {}).sort()) out.push({ name, value: String(labels![name]) });
  return out;
}

/** What a reader of the protobuf exposition gets back (the demo's live line, tests). */
export interface DecodedFamily {
  name: string;
  help?: string;
  type?: string;
  metric: {
    label?: LabelPair[];
    counter?: { value?: number };
    gauge?: { value?: number };
    histogram?: {
      sample_count?: number; sample_sum?: number; schema?: number; zero_threshold?: number; zero_count?: number;
      bucket?: { upper_bound?: number; cumulative_count?: number }[];
      positive_span?: { offset?: number; length?: number }[]; positive_delta?: number[];
      negative_span?: { offset?: number; length?: number }[]; negative_delta?: number[];
    };
  }[];
}

/** Every MetricFamily of a length-delimited body, as plain objects (enums as names, longs as numbers). */
export function decodeMetricFamilies(body: Uint8Array): DecodedFamily[] {
  const type = metricFamilyType();
  const reader = pb().Reader.create(body);
  const out: DecodedFamily[] = [];
  while (reader.pos < reader.len) {
    const f = type.toObject(type.decodeDelimited(reader), { longs: Number, enums: String, defaults: false }) as DecodedFamily;
    out.push({ ...f, metric: f.metric ?? [] });
  }
  return out;
}
