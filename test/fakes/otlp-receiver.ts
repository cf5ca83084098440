/**
 * A fake OTLP/HTTP receiver: a real HTTP server on loopback that accepts POST /v1/metrics,
 * POST /v1/traces and POST /v1/logs (protobuf, or OTLP/JSON for traces and logs), decodes the protobuf body with protobufjs against the OTLP schema below
 * (the subset of opentelemetry-proto's metrics/common/resource messages that metrics use,
 * exponential histograms included,
 * field numbers as in opentelemetry-proto v1), and keeps every request for assertions.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import protobuf from 'protobufjs';

const OTLP_METRICS_PROTO = `
syntax = "proto3";
package opentelemetry.proto;

message AnyValue {
  oneof value {
    string string_value = 1;
    bool bool_value = 2;
    int64 int_value = 3;
    double double_value = 4;
    ArrayValue array_value = 5;
    KeyValueList kvlist_value = 6;
    bytes bytes_value = 7;
  }
}
message ArrayValue { repeated AnyValue values = 1; }
message KeyValueList { repeated KeyValue values = 1; }
message KeyValue { string key = 1; AnyValue value = 2; }
message InstrumentationScope { string name = 1; string version = 2; repeated KeyValue attributes = 3; uint32 dropped_attributes_count = 4; }
message Resource { repeated KeyValue attributes = 1; uint32 dropped_attributes_count = 2; }

message ExportMetricsServiceRequest { repeated ResourceMetrics resource_metrics = 1; }
message ResourceMetrics { Resource resource = 1; repeated ScopeMetrics scope_metrics = 2; string schema_url = 3; }
message ScopeMetrics { InstrumentationScope scope = 1; repeated Metric metrics = 2; string schema_url = 3; }
message Metric {
  string name = 1;
  string description = 2;
  string unit = 3;
  oneof data {
    Gauge gauge = 5;
    Sum sum = 7;
    Histogram histogram = 9;
    ExponentialHistogram exponential_histogram = 10;
  }
}
enum AggregationTemporality { AGGREGATION_TEMPORALITY_UNSPECIFIED = 0; AGGREGATION_TEMPORALITY_DELTA = 1; AGGREGATION_TEMPORALITY_CUMULATIVE = 2; }
message Gauge { repeated NumberDataPoint data_points = 1; }
message Sum { repeated NumberDataPoint data_points = 1; AggregationTemporality aggregation_temporality = 2; bool is_monotonic = 3; }
message Histogram { repeated HistogramDataPoint data_points = 1; AggregationTemporality aggregation_temporality = 2; }
message ExponentialHistogram { repeated ExponentialHistogramDataPoint data_points = 1; AggregationTemporality aggregation_temporality = 2; }
message ExponentialHistogramDataPoint {
  repeated KeyValue attributes = 1;
  fixed64 start_time_unix_nano = 2;
  fixed64 time_unix_nano = 3;
  fixed64 count = 4;
  optional double sum = 5;
  sint32 scale = 6;
  fixed64 zero_count = 7;
  Buckets positive = 8;
  Buckets negative = 9;
  uint32 flags = 10;
  optional double min = 12;
  optional double max = 13;
  double zero_threshold = 14;
  message Buckets { sint32 offset = 1; repeated uint64 bucket_counts = 2; }
}
message NumberDataPoint {
  repeated KeyValue attributes = 7;
  fixed64 start_time_unix_nano = 2;
  fixed64 time_unix_nano = 3;
  oneof value { double as_double = 4; sfixed64 as_int = 6; }
  uint32 flags = 8;
}
message HistogramDataPoint {
  repeated KeyValue attributes = 9;
  fixed64 start_time_unix_nano = 2;
  fixed64 time_unix_nano = 3;
  fixed64 count = 4;
  optional double sum = 5;
  repeated fixed64 bucket_counts = 6;
  repeated double explicit_bounds = 7;
  uint32 flags = 10;
  optional double min = 11;
  optional double max = 12;
}
`;

/** opentelemetry-proto v1 trace/v1/trace.proto, the fields infermeter's spans use. */
const OTLP_TRACES_PROTO = `
message ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }
message ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; string schema_url = 3; }
message ScopeSpans { InstrumentationScope scope = 1; repeated Span spans = 2; string schema_url = 3; }
message Span {
  bytes trace_id = 1;
  bytes span_id = 2;
  string trace_state = 3;
  bytes parent_span_id = 4;
  fixed32 flags = 16;
  string name = 5;
  int32 kind = 6;
  fixed64 start_time_unix_nano = 7;
  fixed64 end_time_unix_nano = 8;
  repeated KeyValue attributes = 9;
  uint32 dropped_attributes_count = 10;
  message Event { fixed64 time_unix_nano = 1; string name = 2; repeated KeyValue attributes = 3; uint32 dropped_attributes_count = 4; }
  repeated Event events = 11;
  Status status = 15;
}
message Status { string message = 2; int32 code = 3; }
`;

/** opentelemetry-proto v1's logs messages (event_name is field 12). */
const OTLP_LOGS_PROTO = `
message ExportLogsServiceRequest { repeated ResourceLogs resource_logs = 1; }
message ResourceLogs { Resource resource = 1; repeated ScopeLogs scope_logs = 2; string schema_url = 3; }
message ScopeLogs { InstrumentationScope scope = 1; repeated LogRecord log_records = 2; string schema_url = 3; }
message LogRecord {
  fixed64 time_unix_nano = 1;
  fixed64 observed_time_unix_nano = 11;
  int32 severity_number = 2;
  string severity_text = 3;
  AnyValue body = 5;
  repeated KeyValue attributes = 6;
  uint32 dropped_attributes_count = 7;
  fixed32 flags = 8;
  bytes trace_id = 9;
  bytes span_id = 10;
  string event_name = 12;
}
`;

const ROOT_PROTO = protobuf.parse(OTLP_METRICS_PROTO + OTLP_TRACES_PROTO + OTLP_LOGS_PROTO, { keepCase: false }).root;
const LOGS_TYPE = ROOT_PROTO.lookupType('opentelemetry.proto.ExportLogsServiceRequest');

/** A received log record, the same whichever encoding carried it: attributes flat, the body as its value. */
export interface ReceivedLog {
  encoding: 'protobuf' | 'json';
  timeNs: number;
  eventName: string;
  body: unknown;
  attributes: Record<string, unknown>;
  scope: { name: string; version: string };
  resource: Record<string, unknown>;
}

interface RawLogs {
  resourceLogs?: {
    resource?: { attributes?: KeyValue[] };
    scopeLogs?: { scope?: { name?: string; version?: string }; logRecords?: { timeUnixNano?: number | string; eventName?: string; body?: Record<string, unknown>; attributes?: KeyValue[] }[] }[];
  }[];
}

export function decodeLogs(body: Buffer, json: boolean): ReceivedLog[] {
  const doc = json
    ? (JSON.parse(body.toString('utf8')) as RawLogs)
    : (LOGS_TYPE.toObject(LOGS_TYPE.decode(body), { longs: Number, bytes: String, enums: Number, defaults: false, oneofs: false }) as RawLogs);
  const flat = (list: KeyValue[] | undefined) => {
    const out: Record<string, unknown> = {};
    for (const kv of list ?? []) out[kv.key] = jsonValue(kv.value);
    return out;
  };
  const out: ReceivedLog[] = [];
  for (const rl of doc.resourceLogs ?? []) {
    for (const sl of rl.scopeLogs ?? []) {
      for (const r of sl.logRecords ?? []) {
        out.push({
          encoding: json ? 'json' : 'protobuf', timeNs: Number(r.timeUnixNano ?? 0), eventName: r.eventName ?? '',
          body: r.body === undefined ? undefined : jsonValue(r.body), attributes: flat(r.attributes),
          scope: { name: sl.scope?.name ?? '', version: sl.scope?.version ?? '' }, resource: flat(rl.resource?.attributes),
        });
      }
    }
  }
  return out;
}
const REQUEST_TYPE = ROOT_PROTO.lookupType('opentelemetry.proto.ExportMetricsServiceRequest');
const TRACES_TYPE = ROOT_PROTO.lookupType('opentelemetry.proto.ExportTraceServiceRequest');

/** A received span, the same whichever encoding carried it: ids as lowercase hex, attributes flat. */
export interface ReceivedSpan {
  encoding: 'protobuf' | 'json';
  traceId: string;
  spanId: string;
  /** '' for a root span. */
  parentSpanId: string;
  name: string;
  kind: number;
  startNs: number;
  endNs: number;
  attributes: Record<string, unknown>;
  events: { name: string; timeNs: number; attributes: Record<string, unknown> }[];
  status: { code?: number; message?: string };
  resource: Record<string, unknown>;
}

interface RawSpan {
  traceId?: string; spanId?: string; parentSpanId?: string; name?: string; kind?: number; startTimeUnixNano?: number | string; endTimeUnixNano?: number | string;
  attributes?: KeyValue[]; events?: { name?: string; timeUnixNano?: number | string; attributes?: KeyValue[] }[]; status?: { code?: number; message?: string };
}
interface RawTraces { resourceSpans?: { resource?: { attributes?: KeyValue[] }; scopeSpans?: { spans?: RawSpan[] }[] }[] }

/** OTLP/JSON: AnyValue keys in lowerCamelCase, int64 as strings, ids already hex. */
function jsonValue(v: Record<string, unknown>): unknown {
  if ('intValue' in v) return Number(v['intValue']);
  if ('arrayValue' in v) return ((v['arrayValue'] as { values?: Record<string, unknown>[] }).values ?? []).map(jsonValue);
  return Object.values(v)[0];
}

export function decodeTraces(body: Buffer, json: boolean): ReceivedSpan[] {
  const doc = json
    ? (JSON.parse(body.toString('utf8')) as RawTraces)
    : (TRACES_TYPE.toObject(TRACES_TYPE.decode(body), { longs: Number, bytes: String, enums: Number, defaults: false, oneofs: false }) as RawTraces);
  const hex = (id: string | undefined) => (id === undefined || id === '' ? '' : json ? id.toLowerCase() : Buffer.from(id, 'base64').toString('hex'));
  const flat = (list: KeyValue[] | undefined) => {
    if (!json) {
      const out = attrs(list);
      for (const kv of list ?? []) if ('arrayValue' in kv.value) out[kv.key] = ((kv.value['arrayValue'] as { values?: KeyValue['value'][] }).values ?? []).map((x) => Object.values(x)[0]);
      return out;
    }
    const out: Record<string, unknown> = {};
    for (const kv of list ?? []) out[kv.key] = jsonValue(kv.value);
    return out;
  };
  const spans: ReceivedSpan[] = [];
  for (const rs of doc.resourceSpans ?? []) {
    const resource = flat(rs.resource?.attributes);
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        spans.push({
          encoding: json ? 'json' : 'protobuf',
          traceId: hex(s.traceId), spanId: hex(s.spanId), parentSpanId: hex(s.parentSpanId), name: s.name ?? '', kind: s.kind ?? 0,
          startNs: Number(s.startTimeUnixNano ?? 0), endNs: Number(s.endTimeUnixNano ?? 0), attributes: flat(s.attributes),
          events: (s.events ?? []).map((e) => ({ name: e.name ?? '', timeNs: Number(e.timeUnixNano ?? 0), attributes: flat(e.attributes) })),
          status: s.status ?? {}, resource,
        });
      }
    }
  }
  return spans;
}

/** Plain JSON shapes of the decoded messages (protobufjs toObject, longs as numbers). */
export interface KeyValue { key: string; value: Record<string, unknown> }
export interface NumberPoint { attributes?: KeyValue[]; asDouble?: number; asInt?: number }
export interface HistogramPoint { attributes?: KeyValue[]; count: number; sum?: number; bucketCounts?: number[]; explicitBounds?: number[]; min?: number; max?: number }
export interface ExponentialPoint {
  attributes?: KeyValue[]; count: number; sum?: number; scale?: number; zeroCount?: number; min?: number; max?: number; zeroThreshold?: number;
  positive?: { offset?: number; bucketCounts?: number[] }; negative?: { offset?: number; bucketCounts?: number[] };
}
export interface DecodedMetric {
  name: string;
  description?: string;
  unit?: string;
  gauge?: { dataPoints?: NumberPoint[] };
  sum?: { dataPoints?: NumberPoint[]; aggregationTemporality?: string; isMonotonic?: boolean };
  histogram?: { dataPoints?: HistogramPoint[]; aggregationTemporality?: string };
  exponentialHistogram?: { dataPoints?: ExponentialPoint[]; aggregationTemporality?: string };
}
export interface DecodedRequest {
  resourceMetrics?: { resource?: { attributes?: KeyValue[] }; scopeMetrics?: { scope?: { name?: string; version?: string }; metrics?: DecodedMetric[] }[] }[];
}

export function decodeExportRequest(body: Uint8Array): DecodedRequest {
  return REQUEST_TYPE.toObject(REQUEST_TYPE.decode(body), { longs: Number, enums: String, defaults: false, oneofs: false }) as DecodedRequest;
}

/** Attributes as a flat record of strings/numbers/bools. */
export function attrs(list: KeyValue[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const kv of list ?? []) out[kv.key] = Object.values(kv.value)[0];
  return out;
}

export interface ReceivedExport {
  contentType: string;
  request: DecodedRequest;
}

export class FakeOtlpReceiver {
  readonly received: ReceivedExport[] = [];
  /** Every span of every POST /v1/traces, in arrival order. */
  readonly spans: ReceivedSpan[] = [];
  /** Every log record of every POST /v1/logs, in arrival order. */
  readonly logs: ReceivedLog[] = [];
  /** Every request body as text (to look for markers that must never leave infermeter). */
  readonly rawBodies: string[] = [];
  /** HTTP status to answer with; 200 accepts. */
  status = 200;
  private server: Server | null = null;
  private waiters: (() => void)[] = [];

  /** Listens on loopback; `port` 0 picks a free one (a test may reuse a port it knows is free). */
  async start(port = 0): Promise<string> {
    this.server = createServer((req, res) => {
      void this.handle(req).then(
        (code) => res.writeHead(code, { 'content-type': 'application/x-protobuf' }).end(),
        () => res.writeHead(400).end(),
      );
    });
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  private async handle(req: IncomingMessage): Promise<number> {
    if (req.method !== 'POST' || !['/v1/metrics', '/v1/traces', '/v1/logs'].includes(req.url ?? '')) return 404;
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    if (this.status !== 200) return this.status;
    let body = Buffer.concat(chunks);
    if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
    this.rawBodies.push(body.toString('latin1'));
    if (req.url === '/v1/logs') {
      this.logs.push(...decodeLogs(body, String(req.headers['content-type']).includes('json')));
      for (const w of this.waiters.splice(0)) w();
      return 200;
    }
    if (req.url === '/v1/traces') {
      this.spans.push(...decodeTraces(body, String(req.headers['content-type']).includes('json')));
      for (const w of this.waiters.splice(0)) w();
      return 200;
    }
    this.received.push({ contentType: String(req.headers['content-type']), request: decodeExportRequest(body) });
    for (const w of this.waiters.splice(0)) w();
    return 200;
  }

  /** Every metric of every export, latest export last. */
  metrics(): DecodedMetric[] {
    return this.received.flatMap((r) => (r.request.resourceMetrics ?? []).flatMap((rm) => (rm.scopeMetrics ?? []).flatMap((sm) => sm.metrics ?? [])));
  }

  /** The metric as it was in the latest export that had it (cumulative: the totals). */
  latest(name: string): DecodedMetric | undefined {
    return this.metrics().filter((m) => m.name === name).at(-1);
  }

  /** Resolves once an export satisfies `ok`, or rejects after `timeoutMs`. */
  async waitFor(ok: () => boolean, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!ok()) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`OTLP receiver: condition not met within ${timeoutMs} ms (${this.received.length} metric exports, ${this.spans.length} spans, ${this.logs.length} log records received)`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.min(left, 200));
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  async close(): Promise<void> {
    const s = this.server;
    if (!s) return;
    await new Promise<void>((resolve) => s.close(() => resolve()));
    s.closeAllConnections();
  }
}
