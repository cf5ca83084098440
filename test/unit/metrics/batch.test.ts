/**
 * src/metrics/batch.ts: the one place records are labelled and judged. Each record's model is
 * looked up once (not once per consumer), and its verdicts are exactly judge()'s for that label.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { judgeBatch } from '../../../src/metrics/batch.js';
import { judge } from '../../../src/slo/judge.js';
import { parseSloConfig } from '../../../src/slo/config.js';
import { UNMEASURED, type RequestRecord } from '../../../src/record/record.js';

const record = (over: Partial<RequestRecord>): RequestRecord => ({
  ...UNMEASURED, startedAt: 0, route: 'chat_completions', operation: 'chat', model: 'm', outcome: 'ok', status: 200, streamed: true,
  ttft: 0.3, ttfo: 0.3, e2e: 1, outputTokens: 5, tokenSource: 'usage', errorType: null, ...over,
});

test('labels looked up once per record, verdicts judged against the label (a model-specific SLO applies by label)', () => {
  const slos = parseSloConfig({ default: { ttft: '500ms' }, models: { big: { ttft: '100ms' } } }, 'slos');
  const asked: string[] = [];
  const labelOf = (m: string) => {
    asked.push(m);
    return m === 'big-7b' ? 'big' : 'other';
  };
  const records = [record({ model: 'big-7b' }), record({ model: 'small' }), record({ model: 'big-7b', outcome: 'client_abort' })];
  const batch = judgeBatch(records, 4, slos, labelOf, new Map([['big', 2]]));
  assert.deepEqual(asked, ['big-7b', 'small', 'big-7b'], 'one look-up per record');
  assert.deepEqual(batch.labels, ['big', 'other', 'big']);
  assert.deepEqual(batch.verdicts, [judge(slos, 'big', records[0]!), judge(slos, 'other', records[1]!), null]);
  assert.equal(batch.verdicts[0]![0]!.good, false, '300 ms misses the 100 ms of "big"');
  assert.equal(batch.verdicts[1]![0]!.good, true, 'and meets the default 500 ms');
  assert.equal(batch.inFlight, 4);
  assert.deepEqual([...batch.inFlightByModel!], [['big', 2]]);
  assert.equal(judgeBatch([], 0, slos, labelOf).inFlightByModel, undefined, 'absent unless given');
});
