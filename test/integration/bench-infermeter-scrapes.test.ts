/**
 * `infermeter bench` pointed at infermeter's proxy: its polls of `/metrics` are not traffic.
 * A real infermeter (its own process, the fake `nvidia-smi` following the simulator) fronts the
 * simulator. A bench through the proxy port that also reads the engine's `/metrics` there
 * (the default: TARGET/metrics) has those reads forwarded and counted by route, but never as a
 * model's requests: no `other` row or req/s on the status page, no energy or tokens under model
 * `other`, and the page's requests are exactly the ones the bench sent. With
 * `--infermeter-metrics` the bench reads engine state from infermeter's metrics listener
 * instead, and sends nothing but its requests to the proxy port.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startSimulator, type Simulator } from '../../src/sim/index.js';
import { runBench } from '../../src/bench/run.js';
import type { Sample } from '../../src/lib/prom-text.js';
import { FAKE_NVIDIA_SMI } from '../fakes/gpu.js';
import { InfermeterProcess } from '../fakes/infermeter-process.js';
import { scrape } from '../helpers.js';
import { benchOptions } from './bench-helpers.js';
import { statusWhen } from './ui-helpers.js';

let sim: Simulator | null = null;
let meter: InfermeterProcess | null = null;
after(async () => {
  await meter?.stop();
  await sim?.close();
});

const sum = (samples: Sample[], name: string, where: (l: Record<string, string>) => boolean = () => true) =>
  samples.filter((s) => s.name === name && where(s.labels)).reduce((a, s) => a + s.value, 0);

test('bench through infermeter\'s proxy: its /metrics reads are no model\'s requests or energy; --infermeter-metrics reads the metrics listener instead', { timeout: 60_000 }, async () => {
  sim = await startSimulator({ listen: '127.0.0.1:0', speed: 4 });
  meter = new InfermeterProcess(
    ['--upstream', sim.url, '--listen', '127.0.0.1:0', '--metrics-listen', '127.0.0.1:0', '--no-collector.host', '--nvidia-smi', FAKE_NVIDIA_SMI, '--gpu-source', 'nvidia-smi'],
    { FAKE_NVIDIA_SMI_PERIOD_MS: '250', FAKE_NVIDIA_SMI_SIM_URL: sim.url },
  );
  await meter.start();
  const base = meter.metricsUrl;
  const metrics = async () => (await scrape(`${base}/metrics`)).samples;
  // Idle seconds attributed: the energy side is running before the bench starts.
  await statusWhen(base, (d) => (d.energy?.upstreams[0]?.idleJoules ?? 0) > 0, 20_000);

  // Engine state read through the proxy port, five times a second.
  const through = await runBench(benchOptions(meter.proxyUrl, { warmup: 0, requests: 0, qps: [2], arrivals: 'constant', durationSeconds: 3, engineMetrics: null, sampleIntervalMs: 200 }));
  const end = Date.now();
  const sent = through.steps[0]!.summary.requests;
  assert.equal(through.steps[0]!.summary.ok, sent);
  assert.ok(through.monitor.engine.length >= 10, `${through.monitor.engine.length} engine samples through the proxy port`);
  // Every second of the run attributed, and the page's chart closed past it.
  const doc = await statusWhen(base, (d) => (d.energy?.attributedThrough ?? 0) >= end + 2000 && d.series.start + d.series.points * 1000 >= end + 2000, 30_000);
  const after1 = await metrics();

  const scrapes = sum(after1, 'infermeter_requests_total', (l) => l['route'] === 'engine_metrics');
  assert.ok(scrapes >= through.monitor.engine.length - 1, `the reads were forwarded and counted by route: ${scrapes}`);
  assert.equal(sum(after1, 'infermeter_requests_total', (l) => l['route'] === 'completions'), sent, 'infermeter counted the requests bench sent');
  const otherJoules = sum(after1, 'infermeter_energy_joules_total', (l) => l['gen_ai_request_model'] === 'other');
  assert.equal(otherJoules, 0, `no energy for model other: ${otherJoules} J`);
  assert.equal(sum(after1, 'infermeter_energy_output_tokens_total', (l) => l['gen_ai_request_model'] === 'other'), 0);
  assert.deepEqual(doc.models.map((m) => m.model), [through.config['model']], 'one model row on the page, no other');
  assert.ok(!('other' in (doc.energy?.series.joulesPerOutputToken ?? {})), 'no other in the energy chart');
  const pageRequests = doc.series.requestsPerSecond.reduce<number>((a, v) => a + (v ?? 0), 0);
  console.log(`sent ${sent} (bench ${through.steps[0]!.summary.requestsPerSecond.toFixed(3)} req/s), page ${pageRequests} requests, ${scrapes} /metrics reads forwarded, model other ${otherJoules} J`);
  assert.equal(pageRequests, sent, 'the page\'s requests are the ones bench sent, not its reads of /metrics');
  assert.ok((doc.routes5m['engine_metrics'] ?? 0) >= scrapes - 1, 'the page counts the reads by route');

  // --infermeter-metrics: engine state from the metrics listener; the proxy port sees the requests alone.
  const own = await runBench(benchOptions(meter.proxyUrl, { warmup: 0, requests: 0, qps: [2], arrivals: 'constant', durationSeconds: 2, engineMetrics: null, infermeterMetrics: `${base}/metrics`, sampleIntervalMs: 200 }));
  await statusWhen(base, () => true);
  const after2 = await metrics();
  assert.equal(sum(after2, 'infermeter_requests_total', (l) => l['route'] === 'engine_metrics'), scrapes, 'no read through the proxy port');
  assert.equal(own.config['engineMetrics'], `${base}/metrics`);
  assert.equal((own.environment['engine'] as { kind: string }).kind, 'vllm', 'the engine kind from infermeter_engine_*{engine="vllm"}');
  assert.equal(own.monitor.engineError, null);
  // The engine's gauges and counters, as infermeter's engine collector last read them.
  assert.ok(own.monitor.engine.length >= 5 && own.monitor.engine.every((s) => s.kvCacheUsage !== null && s.requestsRunning !== null && s.prefixCacheQueries !== null), JSON.stringify(own.monitor.engine.slice(0, 2)));
});
