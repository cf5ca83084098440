/**
 * A fake OTLP/gRPC receiver: a real gRPC server (@grpc/grpc-js) on loopback serving
 * opentelemetry.proto.collector.metrics.v1.MetricsService/Export and
 * ...trace.v1.TraceService/Export, decoding each request with the same protobufjs schema as
 * the HTTP receiver.
 */
import * as grpc from '@grpc/grpc-js';
import { decodeExportRequest, decodeTraces, type DecodedMetric, type DecodedRequest, type ReceivedSpan } from './otlp-receiver.js';

const EXPORT_PATH = '/opentelemetry.proto.collector.metrics.v1.MetricsService/Export';
const TRACE_EXPORT_PATH = '/opentelemetry.proto.collector.trace.v1.TraceService/Export';

/** A unary Export method taking and answering raw bytes (an empty response: full success). */
function exportMethod(path: string): grpc.ServiceDefinition[string] {
  return {
    path,
    requestStream: false,
    responseStream: false,
    requestSerialize: (v: Buffer) => v,
    requestDeserialize: (b: Buffer) => b,
    responseSerialize: () => Buffer.alloc(0),
    responseDeserialize: (b: Buffer) => b,
  };
}

export class FakeOtlpGrpcReceiver {
  readonly received: DecodedRequest[] = [];
  readonly spans: ReceivedSpan[] = [];
  private readonly server = new grpc.Server();

  async start(): Promise<string> {
    this.server.addService({ Export: exportMethod(TRACE_EXPORT_PATH) }, {
      Export: (call: grpc.ServerUnaryCall<Buffer, Buffer>, done: grpc.sendUnaryData<Buffer>) => {
        this.spans.push(...decodeTraces(call.request, false));
        done(null, Buffer.alloc(0));
      },
    });
    this.server.addService({ Export: exportMethod(EXPORT_PATH) }, {
      Export: (call: grpc.ServerUnaryCall<Buffer, Buffer>, done: grpc.sendUnaryData<Buffer>) => {
        this.received.push(decodeExportRequest(call.request));
        done(null, Buffer.alloc(0));
      },
    });
    const port = await new Promise<number>((resolve, reject) =>
      this.server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))));
    return `http://127.0.0.1:${port}`;
  }

  latest(name: string): DecodedMetric | undefined {
    const all = this.received.flatMap((r) => (r.resourceMetrics ?? []).flatMap((rm) => (rm.scopeMetrics ?? []).flatMap((sm) => sm.metrics ?? [])));
    return all.filter((m) => m.name === name).at(-1);
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.tryShutdown(() => resolve()));
  }
}
