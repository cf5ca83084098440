/**
 * The bounded breakdown labels (README, Breakdowns): prompt classes and concurrency bands are
 * `le` bands (a value equal to a bound is in that bound's band, past the last is `+Inf`, an
 * unreported prompt is `unknown`); the tenant label keeps the first --tenant-limit tenants seen
 * until restart, every later one is `other`, and a request naming no tenant is `none`, which
 * takes a slot like any other.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Bands, DEFAULT_IN_FLIGHT_BANDS, DEFAULT_PROMPT_CLASSES, TenantLabels, parseBounds, promptClass } from '../../../src/metrics/breakdown.js';

test('README defaults: prompt classes 256..65536 tokens, concurrency bands 1..256 doubling', () => {
  assert.deepEqual([...DEFAULT_PROMPT_CLASSES], [256, 1024, 4096, 16384, 65536]);
  assert.deepEqual([...DEFAULT_IN_FLIGHT_BANDS], [1, 2, 4, 8, 16, 32, 64, 128, 256]);
});

test('bands are le: the bound itself is in its band, just above is in the next, past the last is +Inf', () => {
  const b = new Bands([1, 2, 4]);
  assert.deepEqual(b.values, ['1', '2', '4', '+Inf']);
  assert.deepEqual([0, 1, 1.5, 2, 3, 4, 4.0001, 1e9].map((n) => b.label(n)), ['1', '1', '2', '2', '4', '4', '+Inf', '+Inf']);
  assert.deepEqual([0, 1, 2, 4, 5].map((n) => b.index(n)), [0, 0, 1, 2, 3]);
});

test('prompt class: from usage.prompt_tokens when reported, else unknown', () => {
  const classes = new Bands([256, 1024]);
  assert.equal(promptClass(classes, { inputTokensKnown: true, inputTokens: 256 }), '256');
  assert.equal(promptClass(classes, { inputTokensKnown: true, inputTokens: 257 }), '1024');
  assert.equal(promptClass(classes, { inputTokensKnown: true, inputTokens: 5000 }), '+Inf');
  assert.equal(promptClass(classes, { inputTokensKnown: true, inputTokens: 0 }), '256');
  assert.equal(promptClass(classes, { inputTokensKnown: false, inputTokens: 0 }), 'unknown');
});

test('bounds: positive, strictly ascending, a trailing +Inf dropped; a bad list names itself', () => {
  assert.deepEqual(parseBounds('1,2,4,8'), [1, 2, 4, 8]);
  assert.deepEqual(parseBounds(' 256 , 1024 ,+Inf'), [256, 1024]);
  assert.deepEqual(parseBounds('0.5,inf'), [0.5]);
  assert.deepEqual(parseBounds('3,INF'), [3]);
  assert.deepEqual(parseBounds('7,'), [7]);
  const fails = (v: string, message: string) => assert.throws(() => parseBounds(v), (e: Error) => e.message === message, v);
  fails('', 'expected a comma-separated list of positive numbers such as 1,2,4,8, got ""');
  fails('+Inf', 'expected a comma-separated list of positive numbers such as 1,2,4,8, got "+Inf"');
  fails(' , ', 'expected a comma-separated list of positive numbers such as 1,2,4,8, got " , "');
  fails('1,0', 'expected positive numbers, got "0" in "1,0"');
  fails('-1,2', 'expected positive numbers, got "-1" in "-1,2"');
  fails('1,x', 'expected positive numbers, got "x" in "1,x"');
  fails('1,Infinity', 'expected positive numbers, got "Infinity" in "1,Infinity"');
  fails('1,xinf', 'expected positive numbers, got "xinf" in "1,xinf"');
  fails('1,inf,2', 'expected positive numbers, got "inf" in "1,inf,2"');
  fails('2,2', 'expected strictly ascending bounds, got "2,2"');
  fails('1,4,3', 'expected strictly ascending bounds, got "1,4,3"');
});

test('tenants: the first --tenant-limit seen keep their value, later ones are other; none takes a slot', () => {
  const t = new TenantLabels({ tenantFrom: 'header', tenantLimit: 2 });
  assert.equal(t.label('a'), 'a');
  assert.equal(t.label(null), 'none');
  assert.equal(t.label('b'), 'other', 'none took the second slot');
  assert.equal(t.label('a'), 'a', 'a keeps its label');
  assert.equal(t.label(null), 'none');
  assert.deepEqual(t.list(), ['a', 'none']);
  t.setLimit(3);
  assert.equal(t.label('b'), 'b', 'a higher limit admits a new tenant');
  assert.equal(t.label('c'), 'other');
  t.setLimit(1);
  assert.equal(t.label('b'), 'b', 'a lower limit keeps those already labelled');
  assert.equal(t.label('d'), 'other');
  t.reset();
  assert.deepEqual(t.list(), []);
  assert.equal(t.label('d'), 'd', 'after a reset the set starts afresh');
});

test('tenants off: no label at all, and nothing remembered', () => {
  const t = new TenantLabels({ tenantFrom: 'none', tenantLimit: 20 });
  assert.equal(t.label('a'), '');
  assert.equal(t.label(null), '');
  assert.deepEqual(t.list(), []);
});

test('a limit of zero labels every tenant other', () => {
  const t = new TenantLabels({ tenantFrom: 'api-key', tenantLimit: 0 });
  assert.equal(t.label('key-0123456789ab'), 'other');
  assert.deepEqual(t.list(), []);
});
