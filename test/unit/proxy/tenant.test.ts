/**
 * The tenant as the proxy loop reads it (README, Breakdowns: "`--tenant-header x-tenant-id`
 * takes the tenant from a header (cut to 64 characters); `--tenant-from api-key` takes `key-`
 * and 12 hex characters of HMAC-SHA256(`--tenant-salt`, bearer token) ... Without
 * `--tenant-salt` infermeter makes a random 256-bit salt on first start and keeps it in
 * `--state-dir`", so the reader always has a salt: config.ts resolves it). The expected hashes
 * are computed here with node:crypto from that sentence, never with the product's keyHash
 * (issue 29: hashing a constant instead of the key passed every tenant test).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { keyHash, tenantReader } from '../../../src/proxy/tenant.js';

const readme = (salt: string, token: string) => 'key-' + createHmac('sha256', salt).update(token).digest('hex').slice(0, 12);

test('api-key: key- and 12 hex characters of HMAC-SHA256(salt, token), as README defines it', () => {
  const read = tenantReader({ tenantFrom: 'api-key', tenantHeader: '', tenantSalt: 'pepper' });
  assert.equal(read({ authorization: 'Bearer sk-alpha' }), readme('pepper', 'sk-alpha'));
  assert.equal(read({ authorization: 'Bearer sk-beta' }), readme('pepper', 'sk-beta'));
  assert.notEqual(read({ authorization: 'Bearer sk-alpha' }), read({ authorization: 'Bearer sk-beta' }), 'two keys, two tenants');
  assert.match(read({ authorization: 'Bearer sk-alpha' })!, /^key-[0-9a-f]{12}$/);
  assert.equal(keyHash('pepper', 'sk-alpha'), readme('pepper', 'sk-alpha'));
  // A known answer, so the formula itself is pinned too (HMAC key = salt, message = token).
  assert.equal(readme('infermeter-tenant-v1', 'sk-test'), 'key-' + createHmac('sha256', Buffer.from('infermeter-tenant-v1')).update(Buffer.from('sk-test')).digest('hex').slice(0, 12));
  assert.notEqual(readme('pepper', 'sk-alpha'), readme('sk-alpha', 'pepper'), 'salt and token are not interchangeable');
});

test('api-key: never without a salt (there is no public default); another salt changes every hash', () => {
  assert.throws(() => tenantReader({ tenantFrom: 'api-key', tenantHeader: '', tenantSalt: '' }), /needs a salt/);
  const a = tenantReader({ tenantFrom: 'api-key', tenantHeader: '', tenantSalt: 'install-a' });
  const b = tenantReader({ tenantFrom: 'api-key', tenantHeader: '', tenantSalt: 'install-b' });
  assert.equal(a({ authorization: 'Bearer sk-alpha' }), readme('install-a', 'sk-alpha'));
  assert.equal(b({ authorization: 'Bearer sk-alpha' }), readme('install-b', 'sk-alpha'));
  assert.notEqual(a({ authorization: 'Bearer sk-alpha' }), b({ authorization: 'Bearer sk-alpha' }), 'unlinkable across installations');
});

test('api-key: the bearer token only, whatever the scheme case and spaces; no token, no tenant', () => {
  const read = tenantReader({ tenantFrom: 'api-key', tenantHeader: '', tenantSalt: 's' });
  const want = readme('s', 'tok-1');
  assert.equal(read({ authorization: 'bearer tok-1' }), want);
  assert.equal(read({ authorization: 'BEARER   tok-1  ' }), want);
  assert.equal(read({ authorization: '  Bearer tok-1' }), want);
  assert.equal(read({}), null);
  assert.equal(read({ authorization: '' }), null);
  assert.equal(read({ authorization: 'Basic dXNlcjpwdw==' }), null);
  assert.equal(read({ authorization: 'Bearer' }), null);
  assert.equal(read({ authorization: 'Bearer a b' }), null, 'a token has no spaces');
  assert.equal(read({ authorization: 'xBearer tok-1' }), null);
});

test('header: the value, cut to 64 characters; absent or empty is no tenant; the name in any case', () => {
  const read = tenantReader({ tenantFrom: 'header', tenantHeader: 'X-Tenant-Id', tenantSalt: '' });
  assert.equal(read({ 'x-tenant-id': 'team-a' }), 'team-a');
  assert.equal(read({ 'x-tenant-id': 'a'.repeat(64) }), 'a'.repeat(64));
  assert.equal(read({ 'x-tenant-id': 'b'.repeat(64) + 'c' }), 'b'.repeat(64));
  assert.equal(read({ 'x-tenant-id': ['first', 'second'] as unknown as string }), 'first');
  assert.equal(read({ 'x-tenant-id': '' }), null);
  assert.equal(read({}), null);
  assert.equal(read({ authorization: 'Bearer sk-alpha' }), null, 'the header source never reads the key');
});

test('none: no tenant, whatever the request carries', () => {
  const read = tenantReader({ tenantFrom: 'none', tenantHeader: 'x-tenant-id', tenantSalt: '' });
  assert.equal(read({ 'x-tenant-id': 'team-a', authorization: 'Bearer sk-alpha' }), null);
});
