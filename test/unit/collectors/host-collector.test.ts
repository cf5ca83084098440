import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { resolveConfig } from '../../../src/config.js';
import { createLogger } from '../../../src/lib/log.js';
import { parsePrometheusText, sumSamples } from '../../../src/lib/prom-text.js';
import { HostCollector } from '../../../src/collectors/host/collector.js';
import { HOST_METRICS } from '../../../src/collectors/host/metrics.js';
import { ProxyLoopMetrics } from '../../../src/collectors/host/proxy-loop.js';
import { monitorProxyLoop } from '../../../src/record/loop.js';

const config = resolveConfig({ upstream: 'http://127.0.0.1:9' }, {});

test('host collector produces sane values', async () => {
  const registry = new Registry();
  const host = new HostCollector({ registry, config, log: createLogger('silent') });
  await host.collect();
  await new Promise((r) => setTimeout(r, 200));
  await host.collect(); // network rates need two readings
  const s = parsePrometheusText(await registry.metrics()).samples;
  const v = (name: string) => {
    const found = s.filter((x) => x.name === name);
    assert.equal(found.length, 1, name);
    return found[0]!.value;
  };
  const cpu = v('infermeter_host_cpu_utilization_ratio');
  assert.ok(cpu >= 0 && cpu <= 1, `cpu ${cpu}`);
  for (const n of ['infermeter_host_load1', 'infermeter_host_load5', 'infermeter_host_load15']) assert.ok(v(n) >= 0, n);
  const total = v('infermeter_host_memory_total_bytes');
  const used = v('infermeter_host_memory_used_bytes');
  assert.ok(total > 64 * 1024 * 1024 && used > 0 && used < total, `used ${used} of ${total}`);
  const rss = v('infermeter_process_resident_memory_bytes');
  assert.ok(rss > 1024 * 1024 && rss < total, `rss ${rss}`);
  const heap = v('infermeter_process_heap_used_bytes');
  assert.ok(heap > 0 && heap < rss, `heap ${heap}`);
  assert.ok(v('infermeter_process_cpu_seconds_total') > 0);
  for (const x of s.filter((y) => y.name.startsWith('infermeter_host_network_'))) {
    assert.ok(x.value >= 0 && x.labels['device'], JSON.stringify(x));
  }
});

test('process CPU seconds is exported as a counter (rate() works)', async () => {
  const registry = new Registry();
  const host = new HostCollector({ registry, config, log: createLogger('silent') });
  await host.collect();
  const text = await registry.metrics();
  assert.match(text, /# TYPE infermeter_process_cpu_seconds_total counter/);
  assert.equal(parsePrometheusText(text).types.get('infermeter_host_cpu_utilization_ratio'), 'gauge');
});

test('proxy loop monitor: quantiles ordered, a blocked loop shows up, gauges set from a passed-in sample', async () => {
  const loop = monitorProxyLoop(5);
  await new Promise((r) => setTimeout(r, 30));
  const until = performance.now() + 60;
  while (performance.now() < until); // block the loop
  await new Promise((r) => setTimeout(r, 30));
  const sample = loop.sample();
  loop.stop();
  assert.ok(sample.p50 >= 0 && sample.p50 <= sample.p99 && sample.p99 <= sample.max, JSON.stringify(sample));
  assert.ok(sample.max >= 0.03, `a 60 ms block must show as delay, got max ${sample.max}`);
  assert.ok(sample.heapUsedBytes > 0);
  const structured = structuredClone(sample); // crosses to the metrics worker

  const registry = new Registry();
  new ProxyLoopMetrics(registry).update(0, structured);
  const s = parsePrometheusText(await registry.metrics()).samples;
  assert.equal(sumSamples(s, 'infermeter_proxy_event_loop_delay_seconds', { stat: 'max' }), sample.max);
  assert.equal(sumSamples(s, 'infermeter_proxy_event_loop_delay_seconds', { stat: 'p99' }), sample.p99);
  assert.equal(sumSamples(s, 'infermeter_proxy_event_loop_delay_seconds', { stat: 'p50' }), sample.p50);
  assert.equal(sumSamples(s, 'infermeter_proxy_heap_used_bytes'), sample.heapUsedBytes);
});

test('host metric names use the infermeter_host_/process_/proxy_ prefixes and base units', () => {
  for (const d of HOST_METRICS) {
    assert.match(d.name, /^infermeter_(host|process|proxy)_[a-z0-9_]+$/);
    if (d.unit === 'By') assert.match(d.name, /_bytes$/);
    if (d.type === 'counter') assert.match(d.name, /_total$/);
  }
});
