/**
 * src/side/consumers.ts: the table makes each enabled consumer once, in its order, named as its
 * row; the status page is wired to the trail's slow-request log, the bottleneck verdicts and the
 * capacity estimates of the rows above it; a row the config turns off (ui) or that turns itself off (otlp without
 * OTEL_* variables) makes nothing.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { resolveConfig } from '../../../src/config.js';
import { CONSUMERS } from '../../../src/side/consumers.js';
import { MetricsSide } from '../../../src/side/side.js';
import { StatusPage } from '../../../src/exporters/ui/status-page.js';
import { BottleneckMonitor } from '../../../src/metrics/bottleneck/live.js';
import { HeadroomMonitor } from '../../../src/metrics/headroom/live.js';

const log = pino({ level: 'silent' });
const side = (flags: Record<string, string>) => new MetricsSide(resolveConfig({ upstream: 'http://127.0.0.1:9', ...flags }, {}), log);

test('one consumer per enabled row, in table order, named as its row; the page reads the trail, the verdicts and the capacities', async () => {
  assert.deepEqual(CONSUMERS.map((c) => c.name), ['requests', 'otlp', 'trail', 'bottleneck', 'headroom', 'ui']);
  const on = side({});
  assert.deepEqual(on.consumers.map((c) => c.name), ['requests', 'trail', 'bottleneck', 'headroom', 'ui'], 'no OTEL_* variable: no OTLP consumer');
  const page = on.consumer(StatusPage)!;
  assert.ok(page.slowRequests, 'the slow-request table reads the trail');
  assert.equal(page.bottlenecks, on.consumer(BottleneckMonitor));
  assert.equal(page.capacities, on.consumer(HeadroomMonitor), 'the page shows the capacity estimates');
  const off = side({ ui: 'false' });
  assert.deepEqual(off.consumers.map((c) => c.name), ['requests', 'trail', 'bottleneck', 'headroom']);
  await on.close();
  await off.close();
});
