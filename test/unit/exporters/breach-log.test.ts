/**
 * The SLO-miss warn line (exporters/trace/trail.ts) gives the value of every SLO it names:
 * a request that missed TTFT and TPOT logs ttftSeconds and tpotSeconds (TPOT per README,
 * (E2E − TTFT) / (output_tokens − 1)).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import pino from 'pino';
import { RequestTrail } from '../../../src/exporters/trace/trail.js';
import { UNMEASURED, type RequestRecord } from '../../../src/record/record.js';

test('the SLO-miss line holds the value of each SLO it names', () => {
  const lines: Record<string, unknown>[] = [];
  const out = new Writable({ write: (chunk: Buffer, _e, done) => { lines.push(JSON.parse(chunk.toString('utf8')) as Record<string, unknown>); done(); } });
  const trail = new RequestTrail({ engine: 'vllm', upstream: 'http://127.0.0.1:8000', slowLogSize: 5, slowLogWindow: 60, traceKeepFailures: false, tracing: null }, pino({ level: 'warn' }, out));
  const r: RequestRecord = {
    ...UNMEASURED, route: 'chat_completions', operation: 'chat', model: 'm', outcome: 'ok', status: 200, streamed: true, errorType: null, startedAt: 0, tenant: null,
    ttft: 0.5, ttfo: 0.5, e2e: 2.5, outputTokens: 11, inputTokens: 10, tokenSource: 'usage',
  };
  trail.ingest({ records: [r], labels: ['m'], verdicts: [[{ slo: 'ttft', name: 'ttft', good: false }, { slo: 'tpot', name: 'tpot', good: false }]], inFlight: 0 });
  const line = lines.find((l) => l['msg'] === 'a request missed its SLO; see /debug/requests');
  assert.ok(line, 'a warn line');
  assert.deepEqual(line['slo'], ['ttft', 'tpot']);
  assert.equal(line['ttftSeconds'], 0.5);
  assert.equal(line['tpotSeconds'], 0.2);
  assert.equal(line['e2eSeconds'], 2.5);
});
