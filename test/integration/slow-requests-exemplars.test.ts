// test-group: alone (the slowest requests by TTFT and TPOT under concurrent load)
/**
 * From a breach to its request: under concurrent load with known trace ids, /debug/requests
 * lists the slowest requests by TTFT and by TPOT in order, and the failed ones, within its
 * bounds; an SLO breach logs one warn line; the OpenMetrics exposition carries the slow
 * request's trace id as an exemplar, and a real Prometheus with exemplar storage returns
 * it from /api/v1/query_exemplars. The 0.0.4 text carries none.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeOtlpReceiver } from '../fakes/otlp-receiver.js';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.js';
import { InfermeterProcess } from '../fakes/infermeter-process.js';
import { PROMETHEUS_MISSING, startPrometheus } from '../helpers/prometheus.js';
import { eventually } from '../fakes/gpu.js';
import type { SlowLogSnapshot } from '../../src/exporters/trace/slow-log.js';

const SIZE = 3;
const FAST = 24;
/** firstMs of the slow ones, slowest last; gaps make TPOT slowest in another order. */
const SLOW = [{ firstMs: 250, gapMs: 2 }, { firstMs: 300, gapMs: 1 }, { firstMs: 350, gapMs: 3 }, { firstMs: 800, gapMs: 1 }];
const traceOf = (i: number) => `${'ab'.repeat(8)}${String(i).padStart(16, '0')}`;

const receiver = new FakeOtlpReceiver();
let upstream: FakeUpstream;
let infermeter: InfermeterProcess;
const dir = mkdtempSync(join(tmpdir(), 'infermeter-slow-'));

before(async () => {
  const otlp = await receiver.start();
  upstream = await startFakeUpstream();
  const config = join(dir, 'config.yml');
  writeFileSync(config, 'slos:\n  default:\n    ttft: 0.2\n');
  infermeter = InfermeterProcess.forUpstream(upstream.url, ['--log-level', 'info', '--slow-log-size', String(SIZE), '--config', config], {
    OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: otlp,
  });
  await infermeter.start();
  const requests: Promise<Response>[] = [];
  const send = (i: number, fake: unknown) =>
    fetch(`${infermeter.proxyUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', traceparent: `00-${traceOf(i)}-${'cd'.repeat(8)}-01` },
      body: JSON.stringify({ model: 'fake-model', stream: true, messages: [{ role: 'user', content: 'hi' }], fake }),
    }).then(async (r) => (await r.text(), r));
  for (let i = 0; i < FAST; i++) requests.push(send(i, { schedule: { firstMs: 5 + (i % 5), chunks: 4, gapMs: 1 } }));
  SLOW.forEach((s, k) => requests.push(send(100 + k, { schedule: { firstMs: s.firstMs, chunks: 6, gapMs: s.gapMs * 20 } })));
  for (let k = 0; k < 5; k++) requests.push(send(200 + k, { status: { code: 500, body: '{}' } }));
  await Promise.all(requests);
});

after(async () => {
  await infermeter?.stop();
  await upstream.close();
  await receiver.close();
});

async function debug(): Promise<SlowLogSnapshot> {
  let snap: SlowLogSnapshot | undefined;
  await eventually(async () => {
    snap = (await (await fetch(`${infermeter.metricsUrl}/debug/requests`)).json()) as SlowLogSnapshot;
    // Records reach the metrics side in 20 ms batches, after the responses.
    const m = snap.models[0];
    return m?.failedInWindow === 5 && m.slowestTtft[0]?.traceId === traceOf(103) && m.slowestTpot.length === SIZE;
  }, 5000, 'every record in the slow log');
  return snap!;
}

test('/debug/requests lists the slowest by TTFT and TPOT, and the failures, within bounds', async () => {
  const snap = await debug();
  assert.equal(snap.perModel, SIZE);
  assert.equal(snap.models.length, 1);
  const m = snap.models[0]!;
  assert.equal(m.model, 'fake-model');
  assert.deepEqual(m.slowestTtft.map((e) => e.traceId), [traceOf(103), traceOf(102), traceOf(101)]);
  for (const e of m.slowestTtft) {
    assert.equal(e.outcome, 'ok');
    assert.equal(e.outputTokens, 6);
    assert.ok(e.inFlightAtStart >= 1 && e.inFlightAtStart <= FAST + SLOW.length + 5);
    assert.deepEqual(e.sloBreached, ['ttft']);
    assert.ok(e.ttftSeconds! >= 0.25);
  }
  // TPOT ≈ gap: 60 ms, 40 ms, 20 ms, 20 ms.
  assert.deepEqual(m.slowestTpot.slice(0, 2).map((e) => e.traceId), [traceOf(102), traceOf(100)]);
  assert.equal(m.slowestTpot.length, SIZE);
  assert.equal(m.failed.length, SIZE, 'the most recent failures, bounded');
  assert.equal(m.failedInWindow, 5);
  for (const e of m.failed) assert.equal(e.errorType, '500');
  const res = await fetch(`${infermeter.metricsUrl}/debug/requests?model=nothing`);
  assert.deepEqual(((await res.json()) as SlowLogSnapshot).models, []);
});

test('an SLO breach logs one warn line, rate-limited', async () => {
  const lines = infermeter.logsMatching('a request missed its SLO; see /debug/requests');
  assert.equal(lines.length, 1);
  assert.deepEqual(lines[0]!['slo'], ['ttft']);
});

test('OpenMetrics carries the slow trace id as an exemplar; the 0.0.4 text does not change', async () => {
  const om = await fetch(`${infermeter.metricsUrl}/metrics`, { headers: { accept: 'application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5' } });
  assert.match(String(om.headers.get('content-type')), /^application\/openmetrics-text; version=1\.0\.0/);
  const text = await om.text();
  assert.ok(text.endsWith('# EOF\n'));
  assert.match(text, /^# TYPE infermeter_requests counter$/m);
  assert.match(text, /^# UNIT gen_ai_server_time_to_first_token_seconds seconds$/m);
  // The slowest request's TTFT bucket names it, with its TTFT as the exemplar's value (within that bucket).
  const line = text.split('\n').find((l) => l.startsWith('gen_ai_server_time_to_first_token_seconds_bucket') && l.includes(`trace_id="${traceOf(103)}"`));
  const m = line && /le="([^"]+)".* # \{trace_id="[0-9a-f]{32}"\} ([0-9.]+) (\d+\.\d{3})$/.exec(line);
  assert.ok(m, `an exemplar line for the slowest request: ${line}`);
  const value = Number(m[2]);
  assert.ok(value >= 0.8 && (m[1] === '+Inf' || value <= Number(m[1])), line);
  assert.ok(Math.abs(Number(m[3]) - Date.now() / 1000) < 60, 'timestamped when the request ended');
  const plain = await (await fetch(`${infermeter.metricsUrl}/metrics`)).text();
  assert.ok(!plain.includes('trace_id'), 'no exemplar in text 0.0.4');
  assert.ok(!plain.includes('# EOF'));
});

test('a real Prometheus with exemplar storage returns the slow request\'s trace id', { skip: PROMETHEUS_MISSING }, async () => {
  const prom = await startPrometheus(join(dir, 'prom'), [new URL(infermeter.metricsUrl).host], ['--enable-feature=exemplar-storage']);
  try {
    let traces: string[] = [];
    await eventually(async () => {
      const now = Date.now() / 1000;
      const res = await fetch(`${prom.url}/api/v1/query_exemplars?query=${encodeURIComponent('gen_ai_server_time_to_first_token_seconds_bucket')}&start=${now - 600}&end=${now + 60}`);
      const body = (await res.json()) as { data: { exemplars: { labels: Record<string, string> }[] }[] };
      traces = body.data.flatMap((s) => s.exemplars.map((e) => e.labels['trace_id']!));
      return traces.includes(traceOf(103));
    }, 15_000, 'the exemplar in Prometheus', 250).catch(async (err: Error) => {
      const targets = await (await fetch(`${prom.url}/api/v1/targets`)).text();
      throw new Error(`${err.message}; exemplars seen: ${traces.join(',')}; targets: ${targets}`);
    });
    // Series names did not change with the format: every sample name of the 0.0.4 text is stored under that name.
    assert.ok((await prom.scalar('sum(infermeter_requests_total)')) >= FAST);
    const scrapeMeta = new Set(['up', 'scrape_duration_seconds', 'scrape_samples_scraped', 'scrape_samples_post_metric_relabeling', 'scrape_series_added']);
    let want: string[] = [];
    let got: string[] = [];
    await eventually(async () => {
      const text = await (await fetch(`${infermeter.metricsUrl}/metrics`)).text();
      want = [...new Set(text.split('\n').filter((l) => l && !l.startsWith('#')).map((l) => /^[^{ ]+/.exec(l)![0]))].sort();
      const stored = (await (await fetch(`${prom.url}/api/v1/label/__name__/values?match[]=${encodeURIComponent('{job="infermeter"}')}`)).json()) as { data: string[] };
      got = stored.data.filter((n) => !scrapeMeta.has(n)).sort();
      return JSON.stringify(got) === JSON.stringify(want);
    }, 5000, 'the same names in Prometheus as in the text', 500).catch(() => assert.deepEqual(got, want));
    assert.equal(await prom.scalar('up{job="infermeter"}'), 1);
  } finally {
    await prom.stop();
  }
});
