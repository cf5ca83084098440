/**
 * --web.config.file (the exporter-toolkit format) on a real daemon: every metrics-listener
 * endpoint but the probes asks for bcrypt basic auth and answers 401 with WWW-Authenticate;
 * tls_server_config makes the listener HTTPS only; a real Prometheus scraping with basic_auth
 * and tls_config sees the target up (and down with a wrong password); the client-certificate
 * types judged per request answer 403 where Go's crypto/tls would refuse; a SIGHUP with a changed
 * password takes effect; a bad file stops startup naming the file and the key, and a bad file
 * on SIGHUP keeps the running settings.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request as httpRequest } from 'node:http';
import { Agent, request } from 'undici';
import bcrypt from 'bcryptjs';
import { stringify } from 'yaml';
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream.js';
import { InfermeterProcess } from '../fakes/infermeter-process.js';
import { makeCerts, type TestCerts } from '../fakes/certs.js';
import { eventually } from '../fakes/gpu.js';
import { PROMETHEUS_MISSING, startPrometheus } from '../helpers/prometheus.js';

const GUARDED = ['/metrics', '/', '/api/v1/status', '/debug/requests'];
const PROBES = ['/healthz', '/readyz'];
/** Cost 4 keeps the test quick; the cost is part of the hash, so the daemon needs nothing else. */
const hash = (password: string) => bcrypt.hashSync(password, 4);
const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
/**
 * The password of the hash src/side/web-config.ts compares unknown users against (so that an
 * unknown user takes as long as a wrong password): it is in the source, hence public.
 */
const DUMMY_PASSWORD = 'infermeter-unknown-user';

let upstream: FakeUpstream;
let certs: TestCerts;
let dir: string;
let agent: Agent;
before(async () => {
  upstream = await startFakeUpstream();
  certs = makeCerts();
  dir = mkdtempSync(join(tmpdir(), 'infermeter-webcfg-'));
  agent = new Agent({ connect: { ca: certs.pem(certs.caCert) } });
});
after(async () => {
  await agent.close();
  await upstream.close();
  rmSync(dir, { recursive: true, force: true });
  rmSync(certs.dir, { recursive: true, force: true });
});

function writeWebConfig(name: string, doc: Record<string, unknown>): string {
  const file = join(dir, name);
  writeFileSync(file, stringify(doc));
  return file;
}

async function started(webConfig: string): Promise<{ d: InfermeterProcess; base: string }> {
  const d = InfermeterProcess.forUpstream(upstream.url, ['--web.config.file', webConfig, '--models', 'fake-model'], {});
  await d.start();
  return { d, base: d.metricsUrl.replace(/^http:/, 'https:') };
}

async function get(base: string, path: string, authorization?: string) {
  const res = await request(`${base}${path}`, { dispatcher: agent, headers: authorization ? { authorization } : {} });
  await res.body.text();
  return { status: res.statusCode, challenge: res.headers['www-authenticate'] };
}

test('every endpoint but the probes needs the right password; HTTPS only; a SIGHUP changes the password', async () => {
  const file = writeWebConfig('web.yml', {
    tls_server_config: { cert_file: certs.serverCert, key_file: certs.serverKey, min_version: 'TLS12' },
    basic_auth_users: { prometheus: hash('first-secret') },
  });
  const { d, base } = await started(file);
  try {
    for (const path of GUARDED) {
      const none = await get(base, path);
      assert.equal(none.status, 401, `${path} without credentials`);
      assert.match(String(none.challenge), /^Basic realm="infermeter"/, `${path}: WWW-Authenticate`);
      assert.equal((await get(base, path, basic('prometheus', 'wrong'))).status, 401, `${path} with a wrong password`);
      assert.equal((await get(base, path, basic('nobody', 'first-secret'))).status, 401, `${path} with an unknown user`);
      assert.equal((await get(base, path, basic('nobody', DUMMY_PASSWORD))).status, 401, `${path}: an unknown user with the dummy hash's password`);
      assert.equal((await get(base, path, basic('prometheus', DUMMY_PASSWORD))).status, 401, `${path}: a known user with the dummy hash's password`);
      assert.equal((await get(base, path, basic('prometheus', 'first-secret'))).status, 200, `${path} with the right password`);
    }
    for (const path of PROBES) assert.equal((await get(base, path)).status, 200, `${path} stays open for the kubelet`);
    // POST /-/reload and unknown paths are behind the guard too.
    assert.equal((await get(base, '/nothing-here')).status, 401);

    // Plain HTTP to the TLS listener gets no HTTP answer at all.
    const port = Number(new URL(base).port);
    const plain = await new Promise<string>((resolve) => {
      const req = httpRequest({ host: '127.0.0.1', port, path: '/metrics', timeout: 3000 }, (res) => resolve(`answered ${res.statusCode}`));
      req.on('error', (err) => resolve(`refused: ${err.message}`));
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.end();
    });
    assert.match(plain, /^refused/);

    // A bad file on SIGHUP: the running users stay.
    writeFileSync(file, stringify({ basic_auth_users: { prometheus: 'not-a-hash' } }));
    d.signal('SIGHUP');
    await eventually(() => d.logs.some((l) => l.msg === 'config reload failed; the running config stays' && String(l['err']).includes('basic_auth_users.prometheus')), 5000, 'the failed reload is logged with the key');
    assert.equal((await get(base, '/metrics', basic('prometheus', 'first-secret'))).status, 200);

    writeWebConfig('web.yml', {
      tls_server_config: { cert_file: certs.serverCert, key_file: certs.serverKey },
      basic_auth_users: { prometheus: hash('second-secret') },
    });
    d.signal('SIGHUP');
    await eventually(async () => (await get(base, '/metrics', basic('prometheus', 'second-secret'))).status === 200, 5000, 'the new password works after SIGHUP');
    assert.equal((await get(base, '/metrics', basic('prometheus', 'first-secret'))).status, 401, 'the old password no longer works');
    assert.equal(d.logs.filter((l) => JSON.stringify(l).includes('second-secret') || JSON.stringify(l).includes('first-secret')).length, 0, 'no password in the logs');
  } finally {
    assert.equal(await d.stop(), 0);
  }
});

test('a real Prometheus scraping with basic_auth and tls_config sees the target up, and down with a wrong password', { skip: !process.env['CI'] && PROMETHEUS_MISSING }, async () => {
  const file = writeWebConfig('web-prom.yml', {
    tls_server_config: { cert_file: certs.serverCert, key_file: certs.serverKey },
    basic_auth_users: { prometheus: hash('scrape-secret') },
  });
  const { d, base } = await started(file);
  const target = new URL(base).host;
  const job = (name: string, password: string) => ({
    job_name: name, scheme: 'https', scrape_interval: '1s', scrape_timeout: '1s',
    tls_config: { ca_file: certs.caCert, server_name: 'localhost' },
    basic_auth: { username: 'prometheus', password },
    static_configs: [{ targets: [target] }],
  });
  const prom = await startPrometheus(join(dir, 'prom'), [], [], { scrape_configs: [job('good', 'scrape-secret'), job('bad', 'wrong')] });
  try {
    await eventually(async () => (await prom.scalar('up{job="good"}')) === 1 && (await prom.scalar('up{job="bad"}')) === 0, 15_000, 'up{job="good"} 1 and up{job="bad"} 0', 250);
    // Prometheus's own count of what each scrape carried: the guarded scrape brings samples, the refused one none.
    assert.ok((await prom.scalar('scrape_samples_scraped{job="good"}')) > 0, 'the scrape with the password carries samples');
    assert.equal(await prom.scalar('scrape_samples_scraped{job="bad"}'), 0, 'the refused scrape carries none');
    assert.equal((await prom.query('infermeter_requests_in_flight{job="bad"}')).length, 0, 'nothing scraped without the password');
    assert.equal((await prom.query('infermeter_requests_in_flight{job="good"}')).length, 1, 'the guarded scrape carries the metrics');
  } finally {
    await prom.stop();
    assert.equal(await d.stop(), 0);
  }
});

test('client certificates: RequireAndVerifyClientCert refuses a client without one from the CA', async () => {
  const file = writeWebConfig('web-mtls.yml', {
    tls_server_config: { cert_file: certs.serverCert, key_file: certs.serverKey, client_ca_file: certs.caCert, client_auth_type: 'RequireAndVerifyClientCert' },
  });
  const { d, base } = await started(file);
  const withCert = new Agent({ connect: { ca: certs.pem(certs.caCert), cert: certs.pem(certs.clientCert), key: certs.pem(certs.clientKey) } });
  try {
    await assert.rejects(request(`${base}/metrics`, { dispatcher: agent }), 'no client certificate: the handshake fails');
    const res = await request(`${base}/metrics`, { dispatcher: withCert });
    await res.body.text();
    assert.equal(res.statusCode, 200);
  } finally {
    await withCert.close();
    assert.equal(await d.stop(), 0);
  }
});

test('client certificates judged per request: RequireAnyClientCert wants one (any); VerifyClientCertIfGiven refuses an untrusted one', async () => {
  // A second set of certificates: its client certificate comes from a CA the listener does not trust.
  const other = makeCerts();
  const clients = {
    none: agent,
    untrusted: new Agent({ connect: { ca: certs.pem(certs.caCert), cert: other.pem(other.clientCert), key: other.pem(other.clientKey) } }),
    trusted: new Agent({ connect: { ca: certs.pem(certs.caCert), cert: certs.pem(certs.clientCert), key: certs.pem(certs.clientKey) } }),
  };
  const status = async (base: string, client: Agent) => {
    const res = await request(`${base}/metrics`, { dispatcher: client });
    return { status: res.statusCode, body: await res.body.text() };
  };
  try {
    // Go's crypto/tls meanings, which exporter-toolkit takes: RequireAnyClientCert needs a
    // certificate and does not verify it; VerifyClientCertIfGiven needs none and verifies one given.
    const any = await started(writeWebConfig('web-any.yml', {
      tls_server_config: { cert_file: certs.serverCert, key_file: certs.serverKey, client_auth_type: 'RequireAnyClientCert' },
    }));
    try {
      const without = await status(any.base, clients.none);
      assert.equal(without.status, 403, 'RequireAnyClientCert, no certificate');
      assert.match(without.body, /client certificate is required/);
      assert.equal((await status(any.base, clients.untrusted)).status, 200, 'RequireAnyClientCert, a certificate of an unknown CA');
      assert.equal((await status(any.base, clients.trusted)).status, 200, 'RequireAnyClientCert, a certificate of the CA');
      for (const path of PROBES) assert.equal((await get(any.base, path)).status, 200, `${path} stays open for the kubelet`);
    } finally {
      assert.equal(await any.d.stop(), 0);
    }
    const ifGiven = await started(writeWebConfig('web-if-given.yml', {
      tls_server_config: { cert_file: certs.serverCert, key_file: certs.serverKey, client_ca_file: certs.caCert, client_auth_type: 'VerifyClientCertIfGiven' },
    }));
    try {
      assert.equal((await status(ifGiven.base, clients.none)).status, 200, 'VerifyClientCertIfGiven, no certificate');
      const untrusted = await status(ifGiven.base, clients.untrusted);
      assert.equal(untrusted.status, 403, 'VerifyClientCertIfGiven, a certificate of an unknown CA');
      assert.match(untrusted.body, /client certificate is not trusted/);
      assert.equal((await status(ifGiven.base, clients.trusted)).status, 200, 'VerifyClientCertIfGiven, a certificate of the CA');
    } finally {
      assert.equal(await ifGiven.d.stop(), 0);
    }
  } finally {
    await clients.untrusted.close();
    await clients.trusted.close();
    rmSync(other.dir, { recursive: true, force: true });
  }
});

test('a bad web config stops startup naming the file and the key', async () => {
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ basic_auth_users: { alice: 'plain-password' } }, /basic_auth_users\.alice: expected a bcrypt hash/],
    [{ tls_server_config: { cert_file: certs.serverCert } }, /tls_server_config\.key_file: is required/],
    [{ tls_server_config: { cert_file: certs.serverCert, key_file: certs.serverKey, client_auth_type: 'Sometimes' } }, /tls_server_config\.client_auth_type: expected one of/],
    [{ tls_server_config: { cert_file: certs.serverCert, key_file: certs.serverKey, min_version: 'TLS9' } }, /tls_server_config\.min_version: expected one of/],
    [{ tls_server_config: { cert_file: certs.serverCert, key_file: certs.serverKey, client_auth_type: 'RequireAndVerifyClientCert' } }, /tls_server_config\.client_ca_file: is required/],
    [{ tls_server_config: { cert_file: certs.serverCert, key_file: certs.serverKey, cipher_suites: ['TLS_AES_128_GCM_SHA256'] } }, /tls_server_config\.cipher_suites: is not supported/],
    [{ basic_auth: {} }, /basic_auth: unknown key/],
  ];
  for (const [i, [doc, want]] of cases.entries()) {
    const file = writeWebConfig(`bad-${i}.yml`, doc);
    const d = InfermeterProcess.forUpstream(upstream.url, ['--web.config.file', file], {});
    await assert.rejects(d.start(), (err: Error) => {
      assert.match(err.message, new RegExp(`--web\\.config\\.file ${file.replace(/[.]/g, '\\.')}`), 'names the file');
      assert.match(err.message, want);
      return true;
    });
  }
});
