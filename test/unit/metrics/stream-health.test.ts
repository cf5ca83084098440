/** Stream health's reading of a record: one ending per streamed request, silences by phase, the silent gauge. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { endingOf, StreamHealth } from '../../../src/metrics/streams/health.js';
import { STREAM_ENDINGS } from '../../../src/metrics/streams/defs.js';
import { DEFAULT_BUCKETS } from '../../../src/lib/metric-def.js';
import { OUTCOMES, UNMEASURED, type RequestRecord } from '../../../src/record/record.js';
import { parsePrometheusText, sumSamples } from '../../../src/lib/prom-text.js';

test('every outcome of a stream is one ending, but what is not a stream\'s ending (refused by infermeter, lost with a worker)', () => {
  const got = OUTCOMES.map((outcome) => [outcome, endingOf({ outcome, terminal: false }), endingOf({ outcome, terminal: true })]);
  assert.deepEqual(got, [
    ['ok', 'no_terminal_event', 'complete'],
    ['upstream_error', 'upstream_error', 'upstream_error'],
    ['stream_error', 'upstream_error', 'upstream_error'],
    ['client_abort', 'client_abort', 'client_abort'],
    ['upstream_timeout', 'stalled', 'stalled'],
    ['upstream_unreachable', 'upstream_error', 'upstream_error'],
    ['rejected', null, null],
    ['worker_lost', null, null],
  ]);
  assert.deepEqual([...new Set(got.flatMap((g) => g.slice(1)).filter((e) => e !== null))].sort(), [...STREAM_ENDINGS].sort());
});

test('streams only, metered routes only; each phase the stream had observed once; the silent gauge reads 0 once none is silent', async () => {
  const registry = new Registry();
  const h = new StreamHealth(registry, { ...DEFAULT_BUCKETS } as never);
  const rec = (o: Partial<RequestRecord>): RequestRecord => ({ ...UNMEASURED, route: 'chat_completions', operation: 'chat', model: 'm', outcome: 'ok', status: 200, streamed: true, errorType: null, startedAt: 0, tenant: null, ...o });
  const records = [
    rec({ terminal: true, silenceFirst: 0.2, silenceContent: 0.05 }),
    rec({ terminal: true, silenceFirst: 0.3, silenceReasoning: 1.5, silenceTool: 5, silenceContent: 0.1, route: 'messages' }),
    rec({ streamed: false, terminal: true, silenceFirst: 9 }),
    rec({ route: 'embeddings', silenceFirst: 9 }),
  ];
  h.ingest({ records, labels: records.map(() => 'm'), verdicts: records.map(() => null), inFlight: 0, silentByModel: new Map([['m', 2]]) });
  let s = parsePrometheusText(await registry.metrics()).samples;
  assert.equal(sumSamples(s, 'infermeter_stream_endings_total'), 2);
  assert.equal(sumSamples(s, 'infermeter_stream_endings_total', { api: 'messages', ending: 'complete' }), 1);
  assert.equal(sumSamples(s, 'infermeter_longest_silence_seconds_count', { phase: 'before_first_token' }), 2);
  assert.equal(sumSamples(s, 'infermeter_longest_silence_seconds_count', { phase: 'tool_call' }), 1);
  assert.equal(sumSamples(s, 'infermeter_longest_silence_seconds_sum', { phase: 'tool_call' }), 5);
  assert.equal(sumSamples(s, 'infermeter_longest_silence_seconds_count', { phase: 'reasoning', api: 'messages' }), 1);
  assert.equal(sumSamples(s, 'infermeter_streams_silent', { gen_ai_request_model: 'm' }), 2);
  h.ingest({ records: [], labels: [], verdicts: [], inFlight: 0, silentByModel: new Map() });
  s = parsePrometheusText(await registry.metrics()).samples;
  assert.equal(s.filter((x) => x.name === 'infermeter_streams_silent').length, 1);
  assert.equal(sumSamples(s, 'infermeter_streams_silent', { gen_ai_request_model: 'm' }), 0);
});
