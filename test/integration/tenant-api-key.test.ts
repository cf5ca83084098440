/**
 * --tenant-from api-key: the tenant label is a short salted hash of the bearer token; the token
 * itself appears nowhere in /metrics or in the logs (trace level), whatever the request does.
 * Without --tenant-salt the salt is random, made on first start and kept in --state-dir: the
 * same after a restart, different in another state dir, never in /metrics or the logs; an
 * explicit --tenant-salt wins over the kept one.
 * The expected labels are README's formula computed here with node:crypto: `key-` and 12 hex
 * characters of HMAC-SHA256(salt, token), with the kept or the given salt. Under
 * --workers the labels are the same: one metrics side labels every worker's records.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { startFakeUpstream } from '../fakes/upstream.js';
import { InfermeterProcess } from '../fakes/infermeter-process.js';
import { scrape, sumSamples, waitForMetrics } from '../helpers.js';
import { createHmac } from 'node:crypto';
import { Agent } from 'undici';

/** README's formula, computed independently of the product's code. */
const keyHash = (salt: string, token: string) => 'key-' + createHmac('sha256', salt).update(token).digest('hex').slice(0, 12);

const dirs: string[] = [];
after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
function stateDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'infermeter-state-'));
  dirs.push(d);
  return d;
}
const keptSalt = (dir: string) => readFileSync(join(dir, 'tenant-salt'), 'utf8').trim();
const hashes = (salt: string) => new Set([...KEYS.map((k) => keyHash(salt, k)), 'none']);

const KEYS = ['sk-TENANTLEAK-aaaaaaaaaaaaaaaaaaaa', 'sk-TENANTLEAK-bbbbbbbbbbbbbbbbbbbb', 'sk-TENANTLEAK-cccccccccccccccccccc'];

interface Run { metrics: string; log: string; tenants: Set<string>; perTenant: Map<string, number> }

async function run(salt: string | null, state: string, extra: string[] = []): Promise<Run> {
  const upstream = await startFakeUpstream();
  const args = ['--tenant-from', 'api-key', '--log-level', 'trace', '--state-dir', state, ...extra];
  // A fresh connection per request, so that under --workers the requests spread over the workers.
  const fresh = () => new Agent({ pipelining: 0, keepAliveTimeout: 1 });
  const im = InfermeterProcess.forUpstream(upstream.url, args, salt === null ? {} : { INFERMETER_TENANT_SALT: salt });
  try {
    await im.start();
    let sent = 0;
    for (const key of KEYS) {
      for (const body of [
        { stream: true, fake: { schedule: { firstMs: 1, chunks: 3, gapMs: 1 } } },
        { stream: false, fake: { json: { content: 'x', promptTokens: 3, completionTokens: 2 } } },
        { stream: true, fake: { status: { code: 401, body: '{"error":"bad key"}' } } },
      ]) {
        sent++;
        const dispatcher = fresh();
        const res = await request(`${im.proxyUrl}/v1/chat/completions`, {
          dispatcher,
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
          body: JSON.stringify({ model: 'fake-model', messages: [{ role: 'user', content: 'hi' }], ...body }),
        });
        await res.body.text();
        await dispatcher.close();
      }
    }
    // A request with no key at all: tenant none.
    sent++;
    await (await request(`${im.proxyUrl}/v1/models`)).body.text();
    await waitForMetrics(`${im.metricsUrl}/metrics`, (s) => sumSamples(s, 'infermeter_requests_total') === sent);
    const { text, samples } = await scrape(`${im.metricsUrl}/metrics`);
    await im.stop();
    const tenants = new Set(samples.map((s) => s.labels['tenant']).filter((t): t is string => t !== undefined));
    const perTenant = new Map([...tenants].map((t) => [t, sumSamples(samples, 'infermeter_requests_total', { tenant: t })]));
    return { metrics: text, log: JSON.stringify(im.logs) + im.stderr, tenants, perTenant };
  } finally {
    await im.stop();
    await upstream.close();
  }
}

test('an API key never appears in /metrics or logs; its tenant is a salted hash', async () => {
  const state = stateDir();
  const plain = await run(null, state);
  assert.ok(plain.log.includes('infermeter ready'), 'the logs were read');
  for (const text of [plain.metrics, plain.log]) assert.ok(!text.includes('TENANTLEAK'), 'no key, nor any part of one, leaked');
  const expected = hashes(keptSalt(state));
  assert.equal(expected.size, KEYS.length + 1, 'three keys, three labels');
  assert.deepEqual(plain.tenants, expected);
  for (const t of plain.tenants) if (t !== 'none') assert.match(t, /^key-[0-9a-f]{12}$/);

  // An explicit salt: other hashes for the same keys (unlinkable across installations); it wins over the kept one.
  const salted = await run('install-secret-1', state);
  assert.ok(!salted.metrics.includes('TENANTLEAK') && !salted.log.includes('TENANTLEAK') && !salted.log.includes('install-secret-1'));
  assert.deepEqual(salted.tenants, hashes('install-secret-1'));
  for (const k of KEYS) assert.ok(!salted.tenants.has(keyHash(keptSalt(state), k)));
});

test('without --tenant-salt the salt is random, kept in --state-dir across restarts, and never shown', async () => {
  const a = stateDir();
  const first = await run(null, a);
  const salt = keptSalt(a);
  assert.match(salt, /^[0-9a-f]{64}$/, 'a 256-bit random salt');
  assert.equal(statSync(join(a, 'tenant-salt')).mode & 0o777, 0o600, 'readable by its owner only');
  const restarted = await run(null, a);
  assert.equal(keptSalt(a), salt, 'the file is kept, not rewritten');
  assert.deepEqual(restarted.tenants, first.tenants, 'the same labels after a restart');

  const b = stateDir();
  const other = await run(null, b);
  assert.notEqual(keptSalt(b), salt, 'a fresh state dir makes its own salt');
  for (const t of other.tenants) if (t !== 'none') assert.ok(!first.tenants.has(t), `${t} is in both installations`);
  for (const r of [first, restarted, other]) {
    for (const s of [salt, keptSalt(b)]) {
      assert.ok(!r.metrics.includes(s) && !r.log.includes(s), 'the salt is in neither /metrics nor the logs');
      assert.ok(!r.metrics.includes(s.slice(0, 16)) && !r.log.includes(s.slice(0, 16)), 'nor any part of it');
    }
  }
});

test('with api-key and no salt, the state dir defaults to the config file\'s directory and must be writable', async () => {
  const upstream = await startFakeUpstream();
  try {
    const noDir = InfermeterProcess.forUpstream(upstream.url, ['--tenant-from', 'api-key'], {});
    await assert.rejects(noDir.start(), /--state-dir: is required with --tenant-from api-key unless --tenant-salt is set/);
    const dir = stateDir();
    const config = join(dir, 'infermeter.yaml');
    (await import('node:fs')).writeFileSync(config, 'tenantFrom: api-key\n');
    const beside = InfermeterProcess.forUpstream(upstream.url, ['--config', config], {});
    await beside.start();
    await beside.stop();
    assert.match(keptSalt(dir), /^[0-9a-f]{64}$/, 'kept beside the config file');
    const unwritable = InfermeterProcess.forUpstream(upstream.url, ['--tenant-from', 'api-key', '--state-dir', join(config, 'sub')], {});
    await assert.rejects(unwritable.start(), /--state-dir: cannot keep the tenant salt in .*infermeter\.yaml\/sub/);
  } finally {
    await upstream.close();
  }
});

test('--workers 2: the same tenant labels, with the same counts, as one process', async () => {
  const state = stateDir();
  const one = await run(null, state);
  const two = await run(null, state, ['--workers', '2']);
  assert.ok(!two.metrics.includes('TENANTLEAK') && !two.log.includes('TENANTLEAK'));
  assert.deepEqual(two.tenants, hashes(keptSalt(state)));
  assert.deepEqual(two.perTenant, one.perTenant);
  for (const k of KEYS) assert.equal(two.perTenant.get(keyHash(keptSalt(state), k)), 3, 'three requests per key');
});
