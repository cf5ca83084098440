/**
 * The encoder reserves room for a record from its string lengths before writing it: at most 3
 * UTF-8 bytes per UTF-16 unit. A record whose every string is made of 3-byte characters ('€')
 * uses that bound exactly, so an encoder started at its 8-byte header grows to exactly what the
 * reservation says and any under-count (a field left out of the fixed size, a length
 * subtracted) overflows the buffer: the string is cut, or a write throws (issue 29: the
 * reservation's arithmetic survived every mutation, the ASCII test records never reached the
 * bound).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RecordEncoder, decodeRecords } from '../../../src/record/codec.js';
import { UNMEASURED, type RequestRecord } from '../../../src/record/record.js';

const euro = (n: number) => '€'.repeat(n);

function record(n: number, gaps: number): RequestRecord {
  return {
    ...UNMEASURED,
    route: euro(n), operation: euro(n + 1), model: euro(n + 2), outcome: 'stream_error', status: 502, streamed: true,
    ttft: 0.5, ttfo: 0.75, e2e: 1.25, inputTokens: 7, outputTokens: 9, tokenSource: 'chunks',
    chunkGaps: gaps > 0 ? Float32Array.from({ length: gaps }, (_, k) => k / 8) : null,
    meteringFailure: 'invalid_json', errorType: euro(n + 3), startedAt: 1_780_000_000_000.5, inputTokensKnown: true,
    modelAdmitted: true, inFlightAtStart: 3, inFlightAtFirstToken: 2, cachedInputTokens: 1, reasoningTokens: 4,
    tenant: euro(n + 4), traceId: null, spanId: null, parentSpanId: null, traceFlags: 1,
    responseModel: euro(n + 5), finishReasons: euro(n + 6),
  };
}

test('records of 3-byte characters round-trip from an encoder that starts at its header size', () => {
  for (const [n, gaps] of [[1, 0], [5, 0], [40, 3], [0, 1]] as const) {
    const enc = new RecordEncoder(8);
    const r = record(n, gaps);
    enc.add(r);
    const [back] = decodeRecords(enc.take()!);
    assert.deepEqual(back, r, `strings of ${n}+ '€', ${gaps} gaps`);
  }
});

test('several such records in one batch, each reserved on top of the last', () => {
  const enc = new RecordEncoder(8);
  const rs = [record(2, 0), record(3, 2), record(1, 0), record(9, 5)];
  for (const r of rs) enc.add(r);
  assert.equal(enc.count, 4);
  assert.deepEqual(decodeRecords(enc.take()!), rs);
  assert.equal(enc.count, 0, 'take() starts afresh');
  enc.add(rs[0]!);
  assert.deepEqual(decodeRecords(enc.take()!), [rs[0]]);
});

test('a corrupt batch is refused, naming the record or the bytes left over', () => {
  const bytes = () => {
    const enc = new RecordEncoder(8);
    enc.add(record(1, 0));
    enc.add(record(2, 0));
    return new Uint8Array(enc.take()!);
  };
  const second = 8 + (() => { const e = new RecordEncoder(8); e.add(record(1, 0)); return e.take()!.byteLength - 8; })();
  // Layout: u32 version, u32 count, then per record u8 outcome, u8 token source, u8 metering failure.
  for (const [offset, what] of [[0, 'outcome'], [1, 'token source'], [2, 'metering failure']] as const) {
    const b = bytes();
    b[second + offset] = 254;
    assert.throws(() => decodeRecords(b), (e: Error) => e.message === 'record batch: bad record 1', what);
  }
  const b = bytes();
  b[second + 2] = 255; // 255 is "no metering failure": valid
  assert.equal(decodeRecords(b)[1]!.meteringFailure, null);
  const longer = new Uint8Array(bytes().length + 3);
  longer.set(bytes());
  assert.throws(() => decodeRecords(longer), (e: Error) => e.message === 'record batch: 3 bytes left over');
});
