/**
 * An OTLP collector that cannot be reached never harms the proxy: requests succeed,
 * /metrics renders, the failure is logged once for the whole streak, and when the collector
 * comes back it receives the cumulative totals, requests made while it was down included.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { parsePrometheusText, sumSamples } from '../../src/lib/prom-text.js';
import { FakeOtlpReceiver, type DecodedMetric } from '../fakes/otlp-receiver.js';
import { TinyUpstream, TINY_MODEL } from '../fakes/tiny-upstream.js';
import { InfermeterProcess } from '../fakes/infermeter-process.js';

const FAILED_MSG = 'OTLP export failed; retrying with backoff each export period, logged again only on recovery';
const REQUESTS = 5;

const upstream = new TinyUpstream(3);
let infermeter: InfermeterProcess;
let receiver: FakeOtlpReceiver | null = null;
let downPort = 0;

/** A loopback port with nothing listening on it. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

before(async () => {
  downPort = await closedPort();
  const up = await upstream.start();
  infermeter = InfermeterProcess.forUpstream(up, ['--models', TINY_MODEL, '--log-level', 'debug'], {
    OTEL_METRICS_EXPORTER: 'otlp',
    OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: `http://127.0.0.1:${downPort}/v1/metrics`,
    OTEL_METRIC_EXPORT_INTERVAL: '300',
    OTEL_EXPORTER_OTLP_TIMEOUT: '250',
  });
  await infermeter.start();
});

after(async () => {
  await infermeter?.stop();
  await upstream.close();
  await receiver?.close();
});

async function until(ok: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test('requests and /metrics are unaffected while the collector is down; one log line per streak', async () => {
  for (let i = 0; i < REQUESTS; i++) {
    const res = await fetch(`${infermeter.proxyUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: TINY_MODEL, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(res.status, 200);
    assert.match(await res.text(), /\[DONE\]/);
  }
  await until(() => infermeter.logsMatching('OTLP export failed again').length >= 2, 15_000, 'several failed exports');

  const metrics = await fetch(`${infermeter.metricsUrl}/metrics`);
  assert.equal(metrics.status, 200);
  const { samples } = parsePrometheusText(await metrics.text());
  assert.equal(sumSamples(samples, 'infermeter_requests_total', { outcome: 'ok' }), REQUESTS);

  const warned = infermeter.logsMatching(FAILED_MSG);
  assert.equal(warned.length, 1, 'one warning for the whole failure streak');
  assert.equal(warned[0]!['endpoint'], `http://127.0.0.1:${downPort}/v1/metrics`);
  assert.equal(typeof warned[0]!['err'], 'string');
});

test('when the collector comes back it gets the totals, and the recovery is logged', async () => {
  receiver = new FakeOtlpReceiver();
  await receiver.start(downPort);
  const total = (m: DecodedMetric | undefined) => (m?.sum?.dataPoints ?? []).reduce((n, p) => n + Number(p.asDouble ?? p.asInt ?? 0), 0);
  await receiver.waitFor(() => total(receiver!.latest('infermeter.requests')) === REQUESTS, 15_000);
  await until(() => infermeter.logsMatching('OTLP export recovered').length === 1, 5_000, 'the recovery log line');
  assert.equal(infermeter.logsMatching(FAILED_MSG).length, 1);
});

test('shutdown is not held up by a collector that is down', async () => {
  await receiver!.close();
  assert.equal(await infermeter.stop(), 0);
});
