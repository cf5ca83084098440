/** The slow-request log's lists, window and bounds (src/exporters/trace/slow-log.ts), on a fake clock. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SlowLog } from '../../../src/exporters/trace/slow-log.js';
import { UNMEASURED, type RequestRecord } from '../../../src/record/record.js';

function rec(id: number, over: Partial<RequestRecord> = {}): RequestRecord {
  return {
    ...UNMEASURED, route: 'chat', operation: 'chat', model: 'm', outcome: 'ok', status: 200, streamed: true, errorType: null,
    startedAt: 1_700_000_000_000 + id, ttft: 0.1, ttfo: 0.1, e2e: 1, outputTokens: 10, tokenSource: 'usage', traceId: String(id).padStart(32, '0'), ...over,
  };
}

test('keeps the N slowest per list and model over the window, and forgets what left it', () => {
  let now = 0;
  const log = new SlowLog(3, 100, () => now);
  for (let i = 0; i < 50; i++) log.add(rec(i, { ttft: i / 100 }), 'm', []);
  log.add(rec(99, { outcome: 'upstream_error', errorType: '500' }), 'm', ['ttft']);
  log.add(rec(98, { outcome: 'client_abort' }), 'm', []);
  const m = log.snapshot().models[0]!;
  assert.deepEqual(m.slowestTtft.map((e) => e.ttftSeconds), [0.49, 0.48, 0.47]);
  assert.equal(m.slowestTpot.length, 3);
  assert.equal(m.failed.length, 1, 'a client leaving is not a failure');
  assert.equal(m.failedInWindow, 1);
  now = 60_000;
  log.add(rec(200, { ttft: 0.01 }), 'm', []);
  assert.deepEqual(log.snapshot().models[0]!.slowestTtft.map((e) => e.ttftSeconds), [0.49, 0.48, 0.47], 'still in the window');
  now = 121_000;
  log.add(rec(201, { ttft: 0.02 }), 'm', []);
  assert.deepEqual(log.snapshot().models[0]!.slowestTtft.map((e) => e.ttftSeconds), [0.02, 0.01], 'the old ones left the window');
  now = 1_000_000;
  assert.deepEqual(log.snapshot().models, [], 'an idle model disappears');
});

test('a tenant is cut to a bounded length; entries carry no content fields', () => {
  const log = new SlowLog(2, 60, () => 0);
  log.add(rec(1, { tenant: 'x'.repeat(500) }), 'm', []);
  const e = log.snapshot().models[0]!.slowestTtft[0]!;
  assert.equal(e.tenant!.length, 64);
  assert.deepEqual(Object.keys(e).sort(), ['e2eSeconds', 'errorType', 'inFlightAtStart', 'inputTokens', 'operation', 'outcome', 'outputTokens', 'route', 'sloBreached',
    'spanId', 'startedAt', 'status', 'tenant', 'tpotSeconds', 'traceId', 'ttfoSeconds', 'ttftSeconds'].sort());
});
