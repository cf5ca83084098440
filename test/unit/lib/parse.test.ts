/**
 * The option parsers behind every flag (README's flag table: durations such as 500ms, 2s, 5m
 * or bare seconds; sizes such as 32mb or 64KiB; HOST:PORT). Expected values are worked out by
 * hand from the units, never taken from the code's tables.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { oneOf, parseBool, parseDuration, parseHostPort, parseHttpUrl, parseList, parsePositiveInt, parseSize } from '../../../src/lib/parse.js';

const throwsExactly = (fn: () => unknown, message: string) => assert.throws(fn, (e: Error) => e.message === message, message);

test('durations: units to seconds, bare numbers are seconds', () => {
  assert.equal(parseDuration('500ms'), 0.5);
  assert.equal(parseDuration('2s'), 2);
  assert.equal(parseDuration('5m'), 300);
  assert.equal(parseDuration('1h'), 3600);
  assert.equal(parseDuration('1d'), 86400);
  assert.equal(parseDuration('15'), 15);
  assert.equal(parseDuration('0.25'), 0.25);
  assert.equal(parseDuration(' 2s '), 2, 'surrounding spaces are ignored');
  assert.equal(parseDuration(' 7 '), 7);
  assert.equal(parseDuration('0'), 0);
  assert.equal(parseDuration(1.5), 1.5);
  assert.equal(parseDuration(0), 0);
});

test('durations: a bad one names what it got', () => {
  throwsExactly(() => parseDuration('soon'), 'expected a duration such as 500ms, 2s, 5m, got "soon"');
  throwsExactly(() => parseDuration(''), 'expected a duration such as 500ms, 2s, 5m, got ""');
  throwsExactly(() => parseDuration('-5s'), 'expected a duration such as 500ms, 2s, 5m, got "-5s"');
  throwsExactly(() => parseDuration('1.5.2'), 'expected a duration such as 500ms, 2s, 5m, got "1.5.2"');
  throwsExactly(() => parseDuration(-1), 'expected a non-negative duration, got -1');
  throwsExactly(() => parseDuration(Number.POSITIVE_INFINITY), 'expected a non-negative duration, got Infinity');
  throwsExactly(() => parseDuration(Number.NaN), 'expected a non-negative duration, got NaN');
});

test('sizes: decimal and binary units, any case, rounded to whole bytes', () => {
  assert.equal(parseSize('1000'), 1000);
  assert.equal(parseSize('12b'), 12);
  assert.equal(parseSize('32mb'), 32_000_000);
  assert.equal(parseSize('32m'), 32_000_000);
  assert.equal(parseSize('2k'), 2000);
  assert.equal(parseSize('2KB'), 2000);
  assert.equal(parseSize('1g'), 1_000_000_000);
  assert.equal(parseSize('1GB'), 1_000_000_000);
  assert.equal(parseSize('64KiB'), 65536);
  assert.equal(parseSize('1MiB'), 1048576);
  assert.equal(parseSize('1gib'), 1073741824);
  assert.equal(parseSize('1.5kib'), 1536);
  assert.equal(parseSize('0.0015kb'), 2, '1.5 bytes rounds to 2');
  assert.equal(parseSize(' 4 kb '), 4000, 'spaces around and before the unit');
  assert.equal(parseSize(777), 777);
  for (const bad of ['', 'mb', '32 parsecs', '-1kb', '1e3', 'kb32', '32mbx']) {
    throwsExactly(() => parseSize(bad), `expected a size such as 32mb or 64KiB, got "${bad}"`);
  }
});

test('booleans: the usual spellings, any case', () => {
  for (const t of ['true', '1', 'yes', 'on', ' TRUE ', 'On']) assert.equal(parseBool(t), true, t);
  for (const f of ['false', '0', 'no', 'off', ' No ']) assert.equal(parseBool(f), false, f);
  assert.equal(parseBool(true), true);
  assert.equal(parseBool(false), false);
  for (const bad of ['', 'y', '2', 'truth']) throwsExactly(() => parseBool(bad), `expected true or false, got "${bad}"`);
});

test('positive integers', () => {
  assert.equal(parsePositiveInt('1'), 1);
  assert.equal(parsePositiveInt(' 42 '), 42);
  assert.equal(parsePositiveInt(8), 8);
  for (const bad of ['0', '-3', '1.5', 'x', '']) throwsExactly(() => parsePositiveInt(bad), `expected a positive integer, got "${bad}"`);
  throwsExactly(() => parsePositiveInt(0), 'expected a positive integer, got "0"');
  throwsExactly(() => parsePositiveInt(2.5), 'expected a positive integer, got "2.5"');
});

test('lists: comma-separated, trimmed, empty items dropped', () => {
  assert.deepEqual(parseList('a, b ,c'), ['a', 'b', 'c']);
  assert.deepEqual(parseList('a,,b,'), ['a', 'b']);
  assert.deepEqual(parseList(''), []);
  assert.deepEqual(parseList([' x ', '', 'y']), ['x', 'y']);
});

test('oneOf: a listed choice, trimmed; anything else names the choices', () => {
  const engine = oneOf(['vllm', 'sglang'] as const);
  assert.equal(engine('vllm'), 'vllm');
  assert.equal(engine(' sglang '), 'sglang');
  throwsExactly(() => engine('tgi'), 'expected one of vllm, sglang, got "tgi"');
  throwsExactly(() => engine('VLLM'), 'expected one of vllm, sglang, got "VLLM"');
});

test('HOST:PORT, :PORT, PORT and [v6]:PORT', () => {
  assert.deepEqual(parseHostPort('127.0.0.1:8080'), { host: '127.0.0.1', port: 8080 });
  assert.deepEqual(parseHostPort(':9464'), { host: '0.0.0.0', port: 9464 });
  assert.deepEqual(parseHostPort('9464'), { host: '0.0.0.0', port: 9464 });
  assert.deepEqual(parseHostPort('9464', '127.0.0.1'), { host: '127.0.0.1', port: 9464 });
  assert.deepEqual(parseHostPort(':0', '::'), { host: '::', port: 0 });
  assert.deepEqual(parseHostPort('[::1]:8000'), { host: '::1', port: 8000 });
  assert.deepEqual(parseHostPort(' localhost:65535 '), { host: 'localhost', port: 65535 });
  throwsExactly(() => parseHostPort('127.0.0.1:65536'), 'port must be 0-65535, got 65536');
  for (const bad of ['', 'host', 'host:', 'host:80x', '[::1]', 'h:-1']) throwsExactly(() => parseHostPort(bad), `expected HOST:PORT (e.g. 0.0.0.0:8080), got "${bad}"`);
});

test('http(s) URLs: normalized without a trailing slash; no query, fragment or other scheme', () => {
  assert.equal(parseHttpUrl('http://127.0.0.1:8000'), 'http://127.0.0.1:8000');
  assert.equal(parseHttpUrl(' https://engine.example:443/v1/ '), 'https://engine.example/v1');
  assert.equal(parseHttpUrl('http://h:8000/a//'), 'http://h:8000/a');
  throwsExactly(() => parseHttpUrl('not a url'), 'expected an http(s) URL such as http://127.0.0.1:8000, got "not a url"');
  throwsExactly(() => parseHttpUrl('ftp://h/'), 'expected an http or https URL, got protocol "ftp:"');
  throwsExactly(() => parseHttpUrl('http://h/?a=1'), 'the URL must not carry a query or fragment, got "http://h/?a=1"');
  throwsExactly(() => parseHttpUrl('http://h/#x'), 'the URL must not carry a query or fragment, got "http://h/#x"');
});
