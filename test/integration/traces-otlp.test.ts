/**
 * Traces end to end: a running infermeter, switched on only by the standard OTEL_TRACES_*
 * variables, exports one span per request to a real OTLP receiver (protobuf and JSON), with
 * the client's trace id and parent, GenAI attributes and exact token counts; the upstream
 * receives a traceparent whose parent is that span; no incoming context starts a root
 * trace; sampling at 0 exports nothing except, with --trace-keep-failures, a failed request.
 * A marker in the prompt, the completion and the Authorization header appears nowhere.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeOtlpReceiver, type ReceivedSpan } from '../fakes/otlp-receiver.js';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.js';
import { InfermeterProcess } from '../fakes/infermeter-process.js';

const MARKER = 'SECRET-MARKER-7f3a';
const CLIENT_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_SPAN = '00f067aa0ba902b7';
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-0([01])$/;

interface Env {
  receiver: FakeOtlpReceiver;
  upstream: FakeUpstream;
  infermeter: InfermeterProcess;
}

function setup(extraArgs: string[], env: Record<string, string>): Env {
  const e = { receiver: new FakeOtlpReceiver() } as Env;
  before(async () => {
    const otlp = await e.receiver.start();
    e.upstream = await startFakeUpstream();
    e.infermeter = InfermeterProcess.forUpstream(e.upstream.url, ['--log-level', 'info', ...extraArgs], {
      OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: otlp, OTEL_BSP_SCHEDULE_DELAY: '100', ...env,
    });
    await e.infermeter.start();
  });
  after(async () => {
    await e.infermeter?.stop();
    await e.upstream.close();
    await e.receiver.close();
  });
  return e;
}

async function chat(e: Env, body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<{ status: number; text: string; upstreamHeaders: Record<string, unknown> }> {
  const chats = () => e.upstream.events.filter((x) => x.kind === 'request' && x.path === '/v1/chat/completions');
  const before = chats().length;
  const res = await fetch(`${e.infermeter.proxyUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${MARKER}`, ...headers },
    body: JSON.stringify({ model: 'fake-model', messages: [{ role: 'user', content: `say ${MARKER}` }], ...body }),
  });
  const text = await res.text();
  const seen = chats()[before];
  return { status: res.status, text, upstreamHeaders: seen?.headers ?? {} };
}

async function spanWithId(e: Env, spanId: string): Promise<ReceivedSpan> {
  await e.receiver.waitFor(() => e.receiver.spans.some((s) => s.spanId === spanId), 10_000);
  return e.receiver.spans.find((s) => s.spanId === spanId)!;
}

function assertNoMarker(e: Env, debug: string): void {
  for (const body of e.receiver.rawBodies) assert.ok(!body.includes(MARKER), 'no marker in an OTLP export');
  assert.ok(!debug.includes(MARKER), 'no marker in /debug/requests');
  assert.ok(!JSON.stringify(e.infermeter.logs).includes(MARKER) && !e.infermeter.stderr.includes(MARKER), 'no marker in the logs');
}

for (const protocol of ['http/protobuf', 'http/json'] as const) {
  describe(`tracing over ${protocol}`, () => {
    const e = setup([], { OTEL_EXPORTER_OTLP_PROTOCOL: protocol });

    test('the span continues the client trace, carries GenAI attributes and exact tokens, and parents the upstream', async () => {
      const r = await chat(e, { stream: true, fake: { schedule: { firstMs: 30, chunks: 6, gapMs: 5, usage: 6, promptTokens: 11 } } },
        { traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`, tracestate: 'vendor=abc' });
      assert.equal(r.status, 200);
      const tp = TRACEPARENT.exec(String(r.upstreamHeaders['traceparent']));
      assert.ok(tp, `upstream traceparent ${String(r.upstreamHeaders['traceparent'])}`);
      assert.equal(tp[1], CLIENT_TRACE, 'same trace');
      assert.notEqual(tp[2], CLIENT_SPAN, 'a new span: infermeter\'s');
      assert.equal(tp[3], '1', 'sampled, as the parent was');
      assert.equal(r.upstreamHeaders['tracestate'], 'vendor=abc', 'tracestate passes unchanged');

      const span = await spanWithId(e, tp[2]!);
      assert.equal(span.encoding, protocol === 'http/json' ? 'json' : 'protobuf');
      assert.equal(span.traceId, CLIENT_TRACE);
      assert.equal(span.parentSpanId, CLIENT_SPAN);
      assert.equal(span.name, 'chat fake-model');
      assert.equal(span.attributes['gen_ai.operation.name'], 'chat');
      assert.equal(span.attributes['gen_ai.provider.name'], 'vllm');
      assert.equal(span.attributes['gen_ai.request.model'], 'fake-model');
      assert.equal(span.attributes['gen_ai.response.model'], 'fake-model');
      assert.deepEqual(span.attributes['gen_ai.response.finish_reasons'], ['stop']);
      assert.equal(span.attributes['gen_ai.usage.input_tokens'], 11);
      assert.equal(span.attributes['gen_ai.usage.output_tokens'], 6);
      assert.equal(span.attributes['server.address'], '127.0.0.1');
      assert.equal(span.attributes['server.port'], e.upstream.port);
      assert.equal(span.attributes['infermeter.outcome'], 'ok');
      const ttft = span.attributes['infermeter.ttft_seconds'] as number;
      assert.ok(ttft >= 0.03 && ttft < 1, `ttft ${ttft}`);
      assert.ok((span.attributes['infermeter.tpot_seconds'] as number) > 0);
      assert.equal(span.attributes['error.type'], undefined);
      const first = span.events.find((ev) => ev.name === 'gen_ai.first_token');
      assert.ok(first, 'a first-token event');
      assert.ok(Math.abs((first.timeNs - span.startNs) / 1e9 - ttft) < 0.002, 'the event sits at TTFT');
      assert.ok(span.endNs > first.timeNs);
    });

    test('no incoming context: a root span of a new trace; a failure carries error.type', async () => {
      const r = await chat(e, { stream: false, fake: { status: { code: 503, body: '{"error":"busy"}' } } });
      assert.equal(r.status, 503);
      const tp = TRACEPARENT.exec(String(r.upstreamHeaders['traceparent']));
      assert.ok(tp);
      assert.equal(tp[3], '1', 'parentbased_always_on samples a root');
      const span = await spanWithId(e, tp[2]!);
      assert.equal(span.traceId, tp[1]);
      assert.notEqual(span.traceId, CLIENT_TRACE);
      assert.equal(span.parentSpanId, '');
      assert.equal(span.attributes['error.type'], '503');
      assert.equal(span.status.code, 2, 'status ERROR');
    });

    test('an invalid traceparent is treated as absent', async () => {
      const r = await chat(e, { stream: false, fake: { json: { content: MARKER, promptTokens: 3, completionTokens: 2 } } }, { traceparent: `00-${'0'.repeat(32)}-${CLIENT_SPAN}-01`, tracestate: 'x=y' });
      const tp = TRACEPARENT.exec(String(r.upstreamHeaders['traceparent']));
      assert.ok(tp);
      assert.notEqual(tp[1], '0'.repeat(32));
      assert.equal(r.upstreamHeaders['tracestate'], undefined, 'tracestate dropped with its unusable traceparent');
      const span = await spanWithId(e, tp[2]!);
      assert.equal(span.parentSpanId, '');
      assert.equal(span.attributes['gen_ai.usage.output_tokens'], 2);
      assert.deepEqual(span.attributes['gen_ai.response.finish_reasons'], ['stop'], 'from the non-streamed body');
      const debug = await (await fetch(`${e.infermeter.metricsUrl}/debug/requests`)).text();
      assertNoMarker(e, debug);
    });
  });
}

describe('sampling at 0 with --trace-keep-failures, under --workers 2', () => {
  const e = setup(['--trace-keep-failures', 'true', '--workers', '2'], { OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' });

  test('an ok request exports no span and tells the upstream it is unsampled; a failed one is kept', async () => {
    const ok = await chat(e, { stream: true, fake: { schedule: { firstMs: 5, chunks: 3, gapMs: 2 } } }, { traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01` });
    const okTp = TRACEPARENT.exec(String(ok.upstreamHeaders['traceparent']));
    assert.ok(okTp);
    assert.equal(okTp[1], CLIENT_TRACE, 'the trace still propagates');
    assert.equal(okTp[3], '0', 'traceidratio ignores the parent: unsampled');
    const failed = await chat(e, { stream: true, fake: { schedule: { firstMs: 5, chunks: 5, gapMs: 2 }, fault: { afterChunks: 2, kind: 'error' } } });
    const failedTp = TRACEPARENT.exec(String(failed.upstreamHeaders['traceparent']));
    assert.ok(failedTp);
    assert.equal(failedTp[3], '0');
    const span = await spanWithId(e, failedTp[2]!);
    assert.equal(span.attributes['infermeter.outcome'], 'stream_error');
    assert.equal(span.attributes['error.type'], 'stream_error');
    // The kept span was exported after the ok request's record: had that one been exported, it would be here.
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(e.receiver.spans.filter((s) => s.spanId === okTp[2]).length, 0, 'the unsampled ok request has no span');
    assert.equal(e.receiver.spans.length, 1);
  });
});

describe('tracing off', () => {
  const e = { receiver: new FakeOtlpReceiver() } as Env;
  before(async () => {
    await e.receiver.start();
    e.upstream = await startFakeUpstream();
    e.infermeter = InfermeterProcess.forUpstream(e.upstream.url, [], {});
    await e.infermeter.start();
  });
  after(async () => {
    await e.infermeter?.stop();
    await e.upstream.close();
    await e.receiver.close();
  });

  test('the client traceparent passes through untouched', async () => {
    const tp = `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`;
    const r = await chat(e, { stream: false, fake: { json: { content: 'x', promptTokens: 1, completionTokens: 1 } } }, { traceparent: tp });
    assert.equal(r.upstreamHeaders['traceparent'], tp);
  });
});
