/** Records survive the batch buffer exactly: every field, null and non-ASCII strings, gaps, many records. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CODEC_VERSION, RecordEncoder, decodeRecords } from '../../../src/record/codec.js';
import { METERING_FAILURES, OUTCOMES, TOKEN_SOURCES, type RequestRecord } from '../../../src/record/record.js';

function record(i: number): RequestRecord {
  return {
    route: i % 2 ? 'chat_completions' : 'other',
    upstream: i % 3 ? i % 64 : -1,
    operation: i % 2 ? 'chat' : 'other',
    model: i % 3 ? `modèle-${i}-✓` : '',
    outcome: OUTCOMES[i % OUTCOMES.length]!,
    status: [200, 0, 502, 413][i % 4]!,
    streamed: i % 2 === 0,
    ttft: i % 5 ? i / 7 : -1,
    ttfo: i / 11,
    e2e: i * 1.000001,
    inputTokens: i * 3,
    outputTokens: 2 ** 31 + i,
    tokenSource: TOKEN_SOURCES[i % TOKEN_SOURCES.length]!,
    chunkGaps: i % 4 ? Float32Array.from({ length: i % 50 }, (_, k) => k / 1000) : null,
    meteringFailure: i % 6 ? null : METERING_FAILURES[i % METERING_FAILURES.length]!,
    errorType: i % 7 ? null : 'upstream_refused',
    startedAt: 1_780_000_000_000 + i * 0.125,
    inputTokensKnown: i % 3 === 0,
    modelAdmitted: i % 4 === 1,
    inFlightAtStart: i % 300,
    inFlightAtFirstToken: i % 5 ? i % 200 : -1,
    cachedInputTokens: i % 4 ? -1 : i * 2,
    reasoningTokens: i % 6 ? -1 : i,
    tenant: i % 5 ? null : `tenant-${i}-é`,
    traceId: i % 2 ? null : (i.toString(16).padStart(32, '0')),
    spanId: i % 2 ? null : (i.toString(16).padStart(16, 'a')),
    parentSpanId: i % 4 ? null : 'b'.repeat(16),
    traceFlags: i % 2,
    responseModel: i % 3 ? null : `served-✓-${i}`,
    finishReasons: i % 4 ? (i % 2 ? 'stop' : 'length,tool_calls') : null,
    terminal: i % 3 === 1,
    // Float32: values it holds exactly.
    silenceFirst: i % 5 ? i / 8 : -1,
    silenceReasoning: i % 2 ? -1 : i * 0.25,
    silenceTool: i % 7 ? -1 : 5.5,
    silenceContent: i % 3 ? i / 16 : -1,
    requestBytes: i * 1031,
    abortPropagation: i % 4 ? -1 : i / 1024,
  };
}

test('a batch of 2,000 records decodes to the same records', () => {
  const enc = new RecordEncoder(64); // tiny start: the buffer must grow
  const want = Array.from({ length: 2000 }, (_, i) => record(i));
  for (const r of want) enc.add(r);
  assert.equal(enc.count, 2000);
  const buf = enc.take()!;
  assert.ok(buf instanceof ArrayBuffer);
  assert.deepEqual(decodeRecords(buf), want);
  assert.equal(enc.take(), null, 'take() starts afresh');
  enc.add(want[1]!);
  assert.deepEqual(decodeRecords(new Uint8Array(enc.take()!)), [want[1]]);
});

test('a batch of another version or a damaged one is refused, never misread', () => {
  const enc = new RecordEncoder();
  enc.add(record(3));
  const buf = new Uint8Array(enc.take()!);
  const other = buf.slice();
  new DataView(other.buffer).setUint32(0, CODEC_VERSION + 1, true);
  assert.throws(() => decodeRecords(other), /version/);
  assert.throws(() => decodeRecords(buf.slice(0, buf.length - 3)));
  const extra = new Uint8Array(buf.length + 2);
  extra.set(buf);
  assert.throws(() => decodeRecords(extra), /left over/);
});
