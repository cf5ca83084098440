/**
 * The SLO-miss warn line (exporters/trace/trail.ts) gives the value of every SLO it names:
 * a request that missed TTFT and TPOT logs ttftSeconds and tpotSeconds (TPOT per README,
 * (E2E − TTFT) / (output_tokens − 1)), and names the upstream the request went to.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import pino from 'pino';
import { RequestTrail } from '../../../src/exporters/trace/trail.js';
import { UNMEASURED, type RequestRecord } from '../../../src/record/record.js';
import { resolveUpstreams } from '../../../src/lib/upstream-spec.js';
import { ENGINES } from '../../../src/lib/engines.js';

test('the SLO-miss line holds the value of each SLO it names, and the upstream', () => {
  const lines: Record<string, unknown>[] = [];
  const out = new Writable({ write: (chunk: Buffer, _e, done) => { lines.push(JSON.parse(chunk.toString('utf8')) as Record<string, unknown>); done(); } });
  const upstreams = resolveUpstreams([{ name: 'llama2-a', url: 'http://127.0.0.1:8001' }, { name: 'llama3-b', url: 'http://127.0.0.1:8002' }], {
    engine: 'vllm', engineMetrics: '', connections: 16, connectTimeout: 10, headersTimeout: 600, idleTimeout: 300,
    upstreamCa: '', upstreamCert: '', upstreamKey: '', upstreamInsecureSkipVerify: false, engines: ENGINES,
  }, 'upstreams');
  const trail = new RequestTrail({ engine: 'vllm', upstream: 'http://127.0.0.1:8001', upstreams, slowLogSize: 5, slowLogWindow: 60, traceKeepFailures: false, tracing: null }, pino({ level: 'warn' }, out));
  const r: RequestRecord = {
    ...UNMEASURED, route: 'chat_completions', operation: 'chat', model: 'm', outcome: 'ok', status: 200, streamed: true, errorType: null, startedAt: 0, tenant: null,
    ttft: 0.5, ttfo: 0.5, e2e: 2.5, outputTokens: 11, inputTokens: 10, tokenSource: 'usage', upstream: 1,
  };
  trail.ingest({ records: [r], labels: ['m'], verdicts: [[{ slo: 'ttft', name: 'ttft', good: false }, { slo: 'tpot', name: 'tpot', good: false }]], inFlight: 0 });
  const line = lines.find((l) => l['msg'] === 'a request missed its SLO; see /debug/requests');
  assert.ok(line, 'a warn line');
  assert.deepEqual(line['slo'], ['ttft', 'tpot']);
  assert.equal(line['ttftSeconds'], 0.5);
  assert.equal(line['tpotSeconds'], 0.2);
  assert.equal(line['e2eSeconds'], 2.5);
  assert.equal(line['upstream'], 'llama3-b', 'the line names the upstream the request went to');
});
