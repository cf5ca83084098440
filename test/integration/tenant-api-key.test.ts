/**
 * --tenant-from api-key: the tenant label is a short salted hash of the bearer token; the token
 * itself appears nowhere in /metrics or in the logs (trace level), whatever the request does.
 * The expected labels are README's formula computed here with node:crypto: `key-` and 12 hex
 * characters of HMAC-SHA256(salt, token), salt `infermeter-tenant-v1` when none is set. Under
 * --workers the labels are the same: one metrics side labels every worker's records.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { startFakeUpstream } from '../fakes/upstream.js';
import { InfermeterProcess } from '../fakes/infermeter-process.js';
import { scrape, sumSamples, waitForMetrics } from '../helpers.js';
import { createHmac } from 'node:crypto';
import { Agent } from 'undici';

const README_SALT = 'infermeter-tenant-v1';
const keyHash = (salt: string, token: string) => 'key-' + createHmac('sha256', salt).update(token).digest('hex').slice(0, 12);

const KEYS = ['sk-TENANTLEAK-aaaaaaaaaaaaaaaaaaaa', 'sk-TENANTLEAK-bbbbbbbbbbbbbbbbbbbb', 'sk-TENANTLEAK-cccccccccccccccccccc'];

interface Run { metrics: string; log: string; tenants: Set<string>; perTenant: Map<string, number> }

async function run(salt: string | null, extra: string[] = []): Promise<Run> {
  const upstream = await startFakeUpstream();
  const args = ['--tenant-from', 'api-key', '--log-level', 'trace', ...extra];
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
  const plain = await run(null);
  assert.ok(plain.log.includes('infermeter ready'), 'the logs were read');
  for (const text of [plain.metrics, plain.log]) assert.ok(!text.includes('TENANTLEAK'), 'no key, nor any part of one, leaked');
  const expected = new Set([...KEYS.map((k) => keyHash(README_SALT, k)), 'none']);
  assert.equal(expected.size, KEYS.length + 1, 'three keys, three labels');
  assert.deepEqual(plain.tenants, expected);
  for (const t of plain.tenants) if (t !== 'none') assert.match(t, /^key-[0-9a-f]{12}$/);

  // Another salt: other hashes for the same keys (unlinkable across installations).
  const salted = await run('install-secret-1');
  assert.ok(!salted.metrics.includes('TENANTLEAK') && !salted.log.includes('TENANTLEAK') && !salted.log.includes('install-secret-1'));
  assert.deepEqual(salted.tenants, new Set([...KEYS.map((k) => keyHash('install-secret-1', k)), 'none']));
  for (const k of KEYS) assert.ok(!salted.tenants.has(keyHash(README_SALT, k)));
});

test('--workers 2: the same tenant labels, with the same counts, as one process', async () => {
  const one = await run(null);
  const two = await run(null, ['--workers', '2']);
  assert.ok(!two.metrics.includes('TENANTLEAK') && !two.log.includes('TENANTLEAK'));
  assert.deepEqual(two.tenants, new Set([...KEYS.map((k) => keyHash(README_SALT, k)), 'none']));
  assert.deepEqual(two.perTenant, one.perTenant);
  for (const k of KEYS) assert.equal(two.perTenant.get(keyHash(README_SALT, k)), 3, 'three requests per key');
});
