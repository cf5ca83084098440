/** Which exposition an Accept header gets (src/exporters/prometheus/negotiate.ts), as real scrapers send them. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chooseExposition } from '../../../src/exporters/prometheus/negotiate.js';

const CASES: [string | undefined, 'protobuf' | 'openmetrics' | 'text', string][] = [
  [undefined, 'text', 'no header (curl, promtool, older scrapers)'],
  ['*/*', 'text', 'anything'],
  ['text/plain;version=0.0.4;q=1,*/*;q=0.1', 'text', 'Prometheus 2.x without native histograms'],
  ['application/openmetrics-text;version=1.0.0;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=1.0.0;q=0.3,text/plain;version=0.0.4;q=0.2,*/*;q=0.1', 'openmetrics', 'Prometheus 3.x default scrape protocols'],
  ['application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1', 'openmetrics', 'Prometheus 2.42 default (exemplar storage or not)'],
  ['application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.5', 'text', 'a tie keeps the 0.0.4 text'],
  ['application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7,text/plain;version=0.0.4;q=0.3,*/*;q=0.2', 'protobuf', 'Prometheus 2.42 with --enable-feature=native-histograms'],
  ['application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.5,application/openmetrics-text;version=1.0.0;q=0.4,*/*;q=0.1', 'protobuf', 'Prometheus 3.x with native histograms'],
  ['application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited', 'protobuf', 'the type alone, spaced'],
  ['application/openmetrics-text;version=1.0.0,application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.5', 'openmetrics', 'protobuf offered but OpenMetrics preferred'],
  ['application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=text', 'text', 'protobuf text encoding is not served'],
  ['application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0', 'text', 'refused with q=0'],
];

for (const [accept, want, what] of CASES) {
  test(`${what}: ${want}`, () => assert.equal(chooseExposition(accept), want));
}
