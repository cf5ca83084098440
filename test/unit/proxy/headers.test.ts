import { test } from 'node:test';
import assert from 'node:assert/strict';
import { clientResponseHeaders, upstreamRequestHeaders } from '../../../src/proxy/headers.js';
import { originFormTarget } from '../../../src/proxy/app.js';

test('hop-by-hop request headers are dropped, the rest pass, X-Forwarded-For is appended', () => {
  const out = upstreamRequestHeaders(
    { host: 'evil.example', connection: 'keep-alive, x-secret-hop', 'x-secret-hop': '1', 'keep-alive': 'timeout=5', te: 'trailers', 'transfer-encoding': 'chunked', upgrade: 'h2c', expect: '100-continue', authorization: 'Bearer k', 'content-type': 'application/json', 'x-forwarded-for': '10.0.0.1' },
    '127.0.0.1',
    12,
  );
  assert.deepEqual(out, { authorization: 'Bearer k', 'content-type': 'application/json', 'x-forwarded-for': '10.0.0.1, 127.0.0.1', 'content-length': '12' });
});

test('hop-by-hop response headers are dropped; content-length only when the body changes', () => {
  const h = { 'content-type': 'text/event-stream', 'keep-alive': 'timeout=5, max=100', connection: 'keep-alive', 'content-length': '10', 'set-cookie': ['a=1', 'b=2'] };
  assert.deepEqual(clientResponseHeaders(h, false), { 'content-type': 'text/event-stream', 'content-length': '10', 'set-cookie': ['a=1', 'b=2'] });
  assert.deepEqual(clientResponseHeaders(h, true), { 'content-type': 'text/event-stream', 'set-cookie': ['a=1', 'b=2'] });
});

test('absolute-form targets keep only their path: the client never picks the upstream host', () => {
  assert.equal(originFormTarget('http://evil.example:9/v1/models?x=1'), '/v1/models?x=1');
  assert.equal(originFormTarget('//evil.example/v1/models'), '/evil.example/v1/models');
  assert.equal(originFormTarget('/v1/chat/completions'), '/v1/chat/completions');
  assert.equal(originFormTarget('*'), '/*');
});
