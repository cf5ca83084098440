/**
 * --tenant-from api-key: the tenant label is a short salted hash of the bearer token; the token
 * itself appears nowhere in /metrics or in the logs (trace level), whatever the request does.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { startFakeUpstream } from '../fakes/upstream.js';
import { InfermeterProcess } from '../fakes/infermeter-process.js';
import { scrape, sumSamples, waitForMetrics } from '../helpers.js';
import { DEFAULT_TENANT_SALT, keyHash } from '../../src/proxy/tenant.js';

const KEYS = ['sk-TENANTLEAK-aaaaaaaaaaaaaaaaaaaa', 'sk-TENANTLEAK-bbbbbbbbbbbbbbbbbbbb', 'sk-TENANTLEAK-cccccccccccccccccccc'];

async function run(salt: string | null): Promise<{ metrics: string; log: string; tenants: Set<string> }> {
  const upstream = await startFakeUpstream();
  const args = ['--tenant-from', 'api-key', '--log-level', 'trace'];
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
        const res = await request(`${im.proxyUrl}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
          body: JSON.stringify({ model: 'fake-model', messages: [{ role: 'user', content: 'hi' }], ...body }),
        });
        await res.body.text();
      }
    }
    // A request with no key at all: tenant none.
    sent++;
    await (await request(`${im.proxyUrl}/v1/models`)).body.text();
    await waitForMetrics(`${im.metricsUrl}/metrics`, (s) => sumSamples(s, 'infermeter_requests_total') === sent);
    const { text, samples } = await scrape(`${im.metricsUrl}/metrics`);
    await im.stop();
    const tenants = new Set(samples.map((s) => s.labels['tenant']).filter((t): t is string => t !== undefined));
    return { metrics: text, log: JSON.stringify(im.logs) + im.stderr, tenants };
  } finally {
    await im.stop();
    await upstream.close();
  }
}

test('an API key never appears in /metrics or logs; its tenant is a salted hash', async () => {
  const plain = await run(null);
  assert.ok(plain.log.includes('infermeter ready'), 'the logs were read');
  for (const text of [plain.metrics, plain.log]) assert.ok(!text.includes('TENANTLEAK'), 'no key, nor any part of one, leaked');
  const expected = new Set([...KEYS.map((k) => keyHash(DEFAULT_TENANT_SALT, k)), 'none']);
  assert.deepEqual(plain.tenants, expected);
  for (const t of plain.tenants) if (t !== 'none') assert.match(t, /^key-[0-9a-f]{12}$/);

  // Another salt: other hashes for the same keys (unlinkable across installations).
  const salted = await run('install-secret-1');
  assert.ok(!salted.metrics.includes('TENANTLEAK') && !salted.log.includes('TENANTLEAK') && !salted.log.includes('install-secret-1'));
  assert.deepEqual(salted.tenants, new Set([...KEYS.map((k) => keyHash('install-secret-1', k)), 'none']));
  for (const k of KEYS) assert.ok(!salted.tenants.has(keyHash(DEFAULT_TENANT_SALT, k)));
});
