/** The breakdown labels' pure parts: bounds, bands, tenants, the in-flight history, prompt-class SLO judging, the flags. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Bands, NO_TENANT, OTHER_TENANT, TenantLabels, parseBounds, promptClass } from '../../../src/metrics/breakdown.js';
import { InFlightHistory } from '../../../src/metrics/in-flight-history.js';
import { judge } from '../../../src/slo/judge.js';
import { parseSloConfig } from '../../../src/slo/config.js';
import { UNMEASURED, type RequestRecord } from '../../../src/record/record.js';
import { keyHash, tenantReader } from '../../../src/proxy/tenant.js';
import { spawnSync } from 'node:child_process';
import { countSeries, renderScenario, NO_SLOS } from '../../../src/metrics/series-count.js';
import { parseSloConfig as slosOf } from '../../../src/slo/config.js';
import { DEFAULT_BUCKETS } from '../../../src/lib/metric-def.js';
import { testConfig } from '../../helpers.js';
import { skipWithout } from '../../helpers/tools.js';

test('bounds parse strictly, naming the bad value', () => {
  assert.deepEqual(parseBounds('1,2,4,+Inf'), [1, 2, 4]);
  assert.deepEqual(parseBounds(' 256 , 1024 '), [256, 1024]);
  for (const bad of ['', '+Inf', '2,1', '1,1', '0,1', 'a', '-1']) assert.throws(() => parseBounds(bad), /expected/, bad);
});

test('bands: le semantics, +Inf past the last bound, unknown without a prompt size', () => {
  const b = new Bands([1, 2, 4]);
  assert.deepEqual([0, 1, 2, 3, 4, 5, 1e9].map((n) => b.label(n)), ['1', '1', '2', '4', '4', '+Inf', '+Inf']);
  assert.deepEqual(b.values, ['1', '2', '4', '+Inf']);
  assert.equal(promptClass(b, { inputTokensKnown: false, inputTokens: 0 }), 'unknown');
  assert.equal(promptClass(b, { inputTokensKnown: true, inputTokens: 0 }), '1');
});

test('tenants: the first --tenant-limit seen keep their label, later ones are other; off means no label', () => {
  const t = new TenantLabels({ tenantFrom: 'header', tenantLimit: 3 });
  assert.deepEqual(['a', 'b', null, 'c', 'a', 'b'].map((x) => t.label(x)), ['a', 'b', NO_TENANT, OTHER_TENANT, 'a', 'b']);
  // A reload may raise the limit (setLimit).
  t.setLimit(4);
  assert.equal(t.label('c'), 'c');
  assert.equal(new TenantLabels({ tenantFrom: 'none', tenantLimit: 3 }).label('a'), '');
});

test('tenant reader: header value cut to 64 characters; api-key hashes only a bearer token', () => {
  const h = tenantReader({ tenantFrom: 'header', tenantHeader: 'x-tenant-id', tenantSalt: '' });
  assert.equal(h({ 'x-tenant-id': 'acme' }), 'acme');
  assert.equal(h({ 'x-tenant-id': 'x'.repeat(500) })!.length, 64);
  assert.equal(h({}), null);
  const k = tenantReader({ tenantFrom: 'api-key', tenantHeader: '', tenantSalt: 's' });
  assert.equal(k({ authorization: 'Bearer sk-123' }), keyHash('s', 'sk-123'));
  assert.equal(k({ authorization: 'bearer   sk-123 ' }), keyHash('s', 'sk-123'));
  assert.equal(k({ authorization: 'Basic dXNlcg==' }), null);
  assert.match(keyHash('s', 'sk-123'), /^key-[0-9a-f]{12}$/);
  assert.notEqual(keyHash('s', 'sk-123'), keyHash('t', 'sk-123'));
});

test('in-flight history answers the count as reported at a time, bounded and coalesced', () => {
  const h = new InFlightHistory();
  assert.equal(h.at(100), 0);
  h.note(1000, 3);
  h.note(1005, 4); // within 10 ms of the last: merged into it
  h.note(2000, 10);
  h.note(2500, 10); // unchanged: no new sample
  h.note(3000, 2);
  assert.deepEqual([500, 1000, 1500, 2000, 2999, 3000, 9999].map((t) => h.at(t)), [4, 4, 4, 10, 10, 2, 2]);
  for (let i = 0; i < 40_000; i++) h.note(10_000 + i * 20, i % 7);
  assert.equal(h.at(10_000 + 39_999 * 20), 39_999 % 7);
  assert.equal(h.at(10_000 + 30_000 * 20 + 5), 30_000 % 7);
  assert.equal(h.latest, 39_999 % 7);
});

const rec = (over: Partial<RequestRecord>): RequestRecord => ({
  ...UNMEASURED, route: 'chat_completions', operation: 'chat', model: 'm', outcome: 'ok', status: 200, streamed: true, errorType: null, startedAt: 0, tenant: null,
  ttft: 1, e2e: 2, outputTokens: 10, inputTokensKnown: true, inputTokens: 100, ...over,
});

test('prompt-class SLOs: a class threshold replaces the model\'s for its prompts, under its own slo label', () => {
  const slos = parseSloConfig({ default: { ttft: '2s', e2e: '10s' }, prompt_classes: [{ prompt_tokens_le: 1024, ttft: '300ms' }, { prompt_tokens_le: 4096, ttft: '500ms' }] }, 'test');
  assert.deepEqual(judge(slos, 'm', rec({ inputTokens: 100, ttft: 0.4 })), [{ slo: 'ttft_prompt_le_1024', name: 'ttft', good: false }, { slo: 'e2e', name: 'e2e', good: true }]);
  assert.deepEqual(judge(slos, 'm', rec({ inputTokens: 2000, ttft: 0.4 })), [{ slo: 'ttft_prompt_le_4096', name: 'ttft', good: true }, { slo: 'e2e', name: 'e2e', good: true }]);
  assert.deepEqual(judge(slos, 'm', rec({ inputTokens: 5000, ttft: 1.5 })), [{ slo: 'ttft', name: 'ttft', good: true }, { slo: 'e2e', name: 'e2e', good: true }]);
  assert.deepEqual(judge(slos, 'm', rec({ inputTokensKnown: false, inputTokens: 0, ttft: 1.5 })), [{ slo: 'ttft', name: 'ttft', good: true }, { slo: 'e2e', name: 'e2e', good: true }]);
  assert.deepEqual(judge(slos, 'm', rec({ outcome: 'upstream_error', inputTokens: 100 })), [{ slo: 'ttft_prompt_le_1024', name: 'ttft', good: false }, { slo: 'e2e', name: 'e2e', good: false }]);
  assert.throws(() => parseSloConfig({ prompt_classes: [{ prompt_tokens_le: 4096, ttft: '1s' }, { prompt_tokens_le: 1024, ttft: '1s' }] }, 'x'), /ascending/);
  assert.throws(() => parseSloConfig({ prompt_classes: [{ prompt_tokens_le: 4096, ttft: '1s', foo: 1 }] }, 'x'), /foo|Unrecognized/);
});

test('flags: --tenant-header implies header; --tenant-from header needs a header; class SLO bounds must be configured classes', () => {
  assert.equal(testConfig({ upstream: 'http://127.0.0.1:1' }).tenantFrom, 'none');
  assert.equal(testConfig({ upstream: 'http://127.0.0.1:1', tenantHeader: 'X-Tenant-ID' }).tenantHeader, 'x-tenant-id');
  assert.equal(testConfig({ upstream: 'http://127.0.0.1:1', tenantHeader: 'x-tenant-id' }).tenantFrom, 'header');
  assert.throws(() => testConfig({ upstream: 'http://127.0.0.1:1', tenantFrom: 'header' }), /--tenant-header/);
  assert.throws(() => testConfig({ upstream: 'http://127.0.0.1:1', tenantFrom: 'cookie' }), /--tenant-from/);
  assert.throws(() => testConfig({ upstream: 'http://127.0.0.1:1', tenantHeader: 'bad header' }), /--tenant-header/);
  assert.throws(() => testConfig({ upstream: 'http://127.0.0.1:1', inFlightBands: '4,2' }), /--in-flight-bands/);
  assert.deepEqual(testConfig({ upstream: 'http://127.0.0.1:1', promptTokensClasses: '100,+Inf' }).promptTokensClasses, [100]);
});

test('series counts are measured from rendered /metrics: the breakdowns multiply as documented', async () => {
  // One served model: label values model-0 and other; two generation operations, four APIs
  // (the latency histograms carry `api`: chat, Messages and Responses are all `chat` operations).
  const c = await countSeries({ models: 1, tenants: 0, slos: NO_SLOS });
  const lines = (buckets: number) => buckets + 3; // + le="+Inf", _sum, _count
  assert.equal(c.get('gen_ai_server_time_to_first_token_seconds'), 2 * 4 * lines(DEFAULT_BUCKETS.ttft.length));
  assert.equal(c.get('infermeter_inter_chunk_latency_seconds'), 2 * 4 * lines(DEFAULT_BUCKETS.chunk.length));
  assert.equal(c.get('infermeter_time_to_first_token_by_prompt_seconds'), 2 * 2 * 7 * lines(DEFAULT_BUCKETS.ttft_by_prompt.length));
  assert.equal(c.get('infermeter_time_per_output_token_by_concurrency_seconds'), 2 * 2 * 10 * lines(DEFAULT_BUCKETS.tpot_by_concurrency.length));
  assert.equal(c.get('infermeter_tokens_total'), 2 * 2 * 4, 'input, output, cached_input, reasoning per model and operation');
  // Tenants past the limit: limit + 1 values on the counters, none on the histograms.
  const t = await countSeries({ models: 1, tenants: 7, tenantLimit: 5, slos: NO_SLOS });
  assert.equal(t.get('infermeter_tokens_total'), 6 * 2 * 2 * 4);
  assert.equal(t.get('gen_ai_server_time_to_first_token_seconds'), c.get('gen_ai_server_time_to_first_token_seconds'));
  const th = await countSeries({ models: 1, tenants: 7, tenantLimit: 5, tenantHistograms: true, slos: NO_SLOS });
  assert.equal(th.get('gen_ai_server_time_to_first_token_seconds'), 6 * c.get('gen_ai_server_time_to_first_token_seconds')!);
});

test('the energy and cost series are bounded: per model label 1 busy energy, 2 cost kinds, 2 token series; per upstream 1 idle energy, 2 idle cost', async () => {
  for (const models of [1, 3]) {
    const c = await countSeries({ models, tenants: 0, slos: NO_SLOS });
    const labels = models + 1; // the served models and other
    assert.equal(c.get('infermeter_energy_joules_total'), labels + 1, `${models} models`);
    assert.equal(c.get('infermeter_cost_total'), 2 * labels + 2);
    assert.equal(c.get('infermeter_energy_output_tokens_total'), 2 * labels);
  }
  // Tenants do not multiply them.
  const t = await countSeries({ models: 1, tenants: 7, tenantLimit: 5, slos: NO_SLOS });
  assert.equal(t.get('infermeter_cost_total'), 2 * 2 + 2);
});

const noPromtool = skipWithout(spawnSync('promtool', ['--version']).status === 0, 'promtool is not installed');

test('promtool check metrics is clean on the worst case: 10 models, 40 tenants over a limit of 20, tenant histograms, prompt-class SLOs', { skip: noPromtool }, async () => {
  const slos = slosOf({ default: { ttft: '2s', tpot: '100ms', e2e: '60s' }, prompt_classes: [{ prompt_tokens_le: 4096, ttft: '500ms' }] }, 'test');
  const text = await renderScenario({ models: 10, tenants: 40, tenantHistograms: true, slos });
  assert.ok(text.includes('tenant="other"') && text.includes('prompt_tokens_le="unknown"') && text.includes('in_flight_le="+Inf"') && text.includes('slo="ttft_prompt_le_4096"'));
  const r = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  assert.equal(r.status, 0, `promtool: ${r.stdout}${r.stderr}`.slice(0, 2000));
});

test('TenantLabels.setLimit (reload): labelled tenants keep their label, a higher limit admits new ones', () => {
  const t = new TenantLabels({ tenantFrom: 'header', tenantLimit: 1 });
  assert.equal(t.label('a'), 'a');
  assert.equal(t.label('b'), OTHER_TENANT);
  t.setLimit(2);
  assert.equal(t.label('b'), 'b');
  assert.equal(t.label('c'), OTHER_TENANT);
  t.setLimit(1);
  assert.deepEqual([t.label('a'), t.label('b'), t.label('d')], ['a', 'b', OTHER_TENANT]);
});
