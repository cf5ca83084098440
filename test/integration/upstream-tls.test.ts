/**
 * TLS: an https upstream verified by a private CA, a wrong CA refused with a coded 502 that
 * names the TLS error, mTLS, skip-verify (with its warning), bad certificate files stopping
 * startup naming the flag, and HTTPS on both of infermeter's own listeners. Certificates are
 * made at test time (fakes/certs.ts); the upstream is the fake upstream serving HTTPS.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { Agent, request } from 'undici';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.js';
import { makeCerts, type TestCerts } from '../fakes/certs.js';
import { rawPost, startProxy, sumSamples, testConfig, waitForMetrics } from '../helpers.js';
import { startInfermeter } from '../../src/daemon/main.js';
import { createLogger } from '../../src/lib/log.js';
import { ConfigError } from '../../src/lib/errors.js';

let certs: TestCerts;
let upstream: FakeUpstream;
let mtlsUpstream: FakeUpstream;

before(async () => {
  certs = makeCerts();
  upstream = await startFakeUpstream(0, '127.0.0.1', { cert: certs.pem(certs.serverCert), key: certs.pem(certs.serverKey) });
  mtlsUpstream = await startFakeUpstream(0, '127.0.0.1', {
    cert: certs.pem(certs.serverCert), key: certs.pem(certs.serverKey), ca: certs.pem(certs.caCert), requestCert: true, rejectUnauthorized: true,
  });
});
after(async () => {
  await upstream.close();
  await mtlsUpstream.close();
});

const chat = { model: 'fake-model', stream: true, fake: { schedule: { firstMs: 5, chunks: 5, gapMs: 5 } } };

test('an https upstream verified by --upstream-ca: streams are relayed whole and metered', async () => {
  const proxy = await startProxy({ upstream: upstream.url, upstreamCa: certs.caCert });
  try {
    const r = await rawPost(`${proxy.url}/v1/chat/completions`, chat);
    assert.equal(r.status, 200);
    assert.match(r.body.toString(), /tok4[\s\S]*\[DONE\]/);
    await waitForMetrics(proxy.metricsUrl, (s) => sumSamples(s, 'infermeter_requests_total', { outcome: 'ok' }) === 1);
  } finally {
    await proxy.close();
  }
});

test('a wrong CA: a coded 502 naming the TLS error, counted upstream_unreachable; infermeter keeps serving', async () => {
  const proxy = await startProxy({ upstream: upstream.url, upstreamCa: certs.otherCaCert });
  try {
    for (let i = 0; i < 2; i++) {
      const r = await rawPost(`${proxy.url}/v1/chat/completions`, chat);
      assert.equal(r.status, 502);
      const err = (JSON.parse(r.body.toString()) as { error: { type: string; message: string } }).error;
      assert.equal(err.type, 'upstream_tls_error');
      assert.match(err.message, /TLS handshake .* failed\. \((UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_GET_ISSUER_CERT_LOCALLY)\)/, err.message);
    }
    await waitForMetrics(proxy.metricsUrl, (s) => sumSamples(s, 'infermeter_requests_total', { outcome: 'upstream_unreachable' }) === 2);
  } finally {
    await proxy.close();
  }
});

test('no CA at all: the system roots do not know the private CA, the same coded 502', async () => {
  const proxy = await startProxy({ upstream: upstream.url });
  try {
    const r = await rawPost(`${proxy.url}/v1/chat/completions`, chat);
    assert.equal(r.status, 502);
    assert.match(r.body.toString(), /upstream_tls_error/);
  } finally {
    await proxy.close();
  }
});

test('mTLS: with --upstream-cert/--upstream-key the upstream accepts; without, a coded 502', async () => {
  const withCert = await startProxy({ upstream: mtlsUpstream.url, upstreamCa: certs.caCert, upstreamCert: certs.clientCert, upstreamKey: certs.clientKey });
  try {
    const r = await rawPost(`${withCert.url}/v1/chat/completions`, chat);
    assert.equal(r.status, 200);
    assert.match(r.body.toString(), /\[DONE\]/);
  } finally {
    await withCert.close();
  }
  const without = await startProxy({ upstream: mtlsUpstream.url, upstreamCa: certs.caCert });
  try {
    const r = await rawPost(`${without.url}/v1/chat/completions`, chat);
    assert.equal(r.status, 502, r.body.toString());
    assert.match(r.body.toString(), /upstream_tls_error|upstream_connection_error/);
  } finally {
    await without.close();
  }
});

test('--upstream-insecure-skip-verify: relays without a CA, and says at start that it is unsafe', async () => {
  const lines: string[] = [];
  const sink = new Writable({ write: (c: Buffer, _e, cb) => (lines.push(c.toString()), cb()) });
  const config = testConfig({ upstream: upstream.url, upstreamInsecureSkipVerify: 'true' });
  const running = await startInfermeter(config, createLogger('info', 'infermeter', sink));
  try {
    const r = await rawPost(`http://127.0.0.1:${running.proxyPort}/v1/chat/completions`, chat);
    assert.equal(r.status, 200);
    assert.ok(lines.some((l) => /"level":40/.test(l) && /NOT verified/.test(l)), lines.join(''));
  } finally {
    await running.close();
  }
});

test('bad certificate files stop startup naming the flag', () => {
  const junk = join(certs.dir, 'junk.pem');
  writeFileSync(junk, 'not a certificate\n');
  const cases: [Record<string, string>, RegExp][] = [
    [{ upstreamCa: join(certs.dir, 'missing.crt') }, /^--upstream-ca: cannot read/],
    [{ upstreamCa: junk }, /^--upstream-ca: .* is not a PEM certificate/],
    [{ upstreamCert: certs.clientCert }, /^--upstream-key: is required with --upstream-cert/],
    [{ upstreamCert: certs.clientCert, upstreamKey: certs.serverKey }, /^--upstream-key: .* does not match/],
    [{ tlsCert: certs.serverCert, tlsKey: junk }, /^--tls-key: .* is not a PEM private key/],
    [{ metricsTlsKey: certs.serverKey }, /^--metrics-tls-cert: is required with --metrics-tls-key/],
  ];
  for (const [flags, message] of cases) {
    assert.throws(() => testConfig({ upstream: upstream.url, ...flags }), (e: unknown) => e instanceof ConfigError && message.test(e.message), JSON.stringify(flags));
  }
  assert.throws(() => testConfig({ upstream: 'http://127.0.0.1:1', upstreamCa: certs.caCert }), /--upstream-ca: applies to an https upstream only/);
});

test('--tls-cert/--tls-key and --metrics-tls-cert/--metrics-tls-key: both listeners speak HTTPS', async () => {
  const proxy = await startProxy({
    upstream: upstream.url, upstreamCa: certs.caCert,
    tlsCert: certs.serverCert, tlsKey: certs.serverKey, metricsTlsCert: certs.serverCert, metricsTlsKey: certs.serverKey,
  });
  const client = new Agent({ connect: { ca: certs.pem(certs.caCert) } });
  try {
    const res = await request(`https://127.0.0.1:${proxy.proxyPort}/v1/chat/completions`, { method: 'POST', body: JSON.stringify(chat), headers: { 'content-type': 'application/json' }, dispatcher: client });
    assert.equal(res.statusCode, 200);
    assert.match(await res.body.text(), /\[DONE\]/);
    const ready = await request(`https://127.0.0.1:${proxy.metricsPort}/readyz`, { dispatcher: client });
    assert.equal(ready.statusCode, 200);
    await ready.body.dump();
    const metrics = await request(`https://127.0.0.1:${proxy.metricsPort}/metrics`, { dispatcher: client });
    assert.match(await metrics.body.text(), /infermeter_requests_total\{[^}]*outcome="ok"/);
    // Plain HTTP to a TLS listener gets nothing useful.
    await assert.rejects(request(`http://127.0.0.1:${proxy.metricsPort}/metrics`, { headersTimeout: 2000 }).then(async (r) => {
      await r.body.dump();
      if (r.statusCode === 200) throw new Error('unexpected');
      throw new Error(`status ${r.statusCode}`);
    }));
  } finally {
    await client.close();
    await proxy.close();
  }
});
