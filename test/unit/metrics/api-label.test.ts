/**
 * The `api` label: on the five latency histograms and stream health's families (streams are
 * the APIs' own) and nowhere else, and exactly the four generation APIs, measured on rendered
 * /metrics after every route and outcome was seen.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { renderScenario, NO_SLOS } from '../../../src/metrics/series-count.js';
import { parsePrometheusText } from '../../../src/lib/prom-text.js';
import { API_LABELS, ROUTE_LABELS, apiLabelOf } from '../../../src/record/routes.js';
import { API_LABEL, REQUEST_METRICS } from '../../../src/metrics/catalog.js';

const LATENCY = [
  'gen_ai_server_time_to_first_token_seconds',
  'infermeter_time_to_first_output_seconds',
  'gen_ai_server_time_per_output_token_seconds',
  'gen_ai_server_request_duration_seconds',
  'infermeter_inter_chunk_latency_seconds',
];
/** Stream health (metrics/streams/): endings and silences are per API by design. */
const STREAMS = ['infermeter_stream_endings_total', 'infermeter_longest_silence_seconds'];

test('api takes exactly the four generation APIs, and only metered routes have one', () => {
  assert.deepEqual([...API_LABELS], ['chat_completions', 'completions', 'messages', 'responses']);
  assert.deepEqual(ROUTE_LABELS.filter((r) => apiLabelOf(r) !== null), [...API_LABELS]);
  assert.equal(apiLabelOf('embeddings'), null);
  assert.equal(apiLabelOf('messages_count_tokens'), null);
  assert.deepEqual(REQUEST_METRICS.filter((m) => (m.labels as readonly string[]).includes(API_LABEL)).map((m) => m.name), LATENCY);
});

test('on /metrics after every route and outcome: the five latency histograms and the stream families carry api, with every API and no other value; no other family has it', async () => {
  const { samples } = parsePrometheusText(await renderScenario({ models: 1, tenants: 0, slos: NO_SLOS }));
  const family = (name: string) => name.replace(/_(bucket|sum|count)$/, '');
  const byFamily = new Map<string, Set<string | undefined>>();
  for (const s of samples) {
    const f = family(s.name);
    if (!byFamily.has(f)) byFamily.set(f, new Set());
    byFamily.get(f)!.add(s.labels[API_LABEL]);
  }
  for (const [f, apis] of byFamily) {
    if (LATENCY.includes(f) || STREAMS.includes(f)) assert.deepEqual([...apis].sort(), [...API_LABELS], f);
    else assert.deepEqual([...apis], [undefined], `${f} has no api label`);
  }
  // Messages and Responses are chat operations: the api label is what keeps them apart.
  const ttft = samples.filter((s) => s.name === 'gen_ai_server_time_to_first_token_seconds_count');
  assert.deepEqual(ttft.filter((s) => s.labels['gen_ai_operation_name'] === 'chat').map((s) => s.labels[API_LABEL]).sort(), ['chat_completions', 'chat_completions', 'messages', 'messages', 'responses', 'responses']);
});
