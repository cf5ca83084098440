/**
 * The web config loader (src/lib/web-config.ts) and guard (src/side/web-config.ts): paths relative to the file, the
 * exporter-toolkit defaults (TLS 1.2 minimum; a client CA alone means verify every client),
 * and the guard in front of a real node:http server: 401 with a challenge for a missing,
 * malformed, unknown or wrong credential, a pass for the right one, and a replaced config
 * taking effect at once.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import bcrypt from 'bcryptjs';
import { Agent, request } from 'undici';
import { listenerTlsOptions, loadWebConfig } from '../../../src/lib/web-config.js';
import { MetricsListener } from '../../../src/side/listener.js';
import type { Routes } from '../../../src/metrics/consumer.js';
import { WebGuard } from '../../../src/side/web-config.js';
import { makeCerts } from '../../fakes/certs.js';

test('loader: paths relative to the file, exporter-toolkit defaults, TLS options', () => {
  const certs = makeCerts();
  const dir = mkdtempSync(join(tmpdir(), 'infermeter-web-'));
  try {
    copyFileSync(certs.serverCert, join(dir, 's.crt'));
    copyFileSync(certs.serverKey, join(dir, 's.key'));
    copyFileSync(certs.caCert, join(dir, 'ca.crt'));
    const file = join(dir, 'web.yml');
    writeFileSync(file, 'tls_server_config:\n  cert_file: s.crt\n  key_file: s.key\n  client_ca_file: ca.crt\n');
    const web = loadWebConfig(file);
    assert.equal(web.tls?.clientAuth, 'RequireAndVerifyClientCert', 'a client CA without a type verifies every client');
    assert.equal(web.tls?.minVersion, 'TLSv1.2');
    assert.equal(web.users.size, 0);
    const opts = listenerTlsOptions(web, { metricsTlsCert: '/nonexistent', metricsTlsKey: '/nonexistent' })!;
    assert.equal(opts.requestCert, true);
    assert.equal(opts.rejectUnauthorized, true);
    assert.ok(String(opts.ca).includes('BEGIN CERTIFICATE'), 'the file wins over the shorthand flags');
    writeFileSync(file, '');
    assert.deepEqual(loadWebConfig(file).tls, null, 'an empty file: no TLS, no users');
    assert.equal(listenerTlsOptions(null, { metricsTlsCert: '', metricsTlsKey: '' }), null);
    writeFileSync(file, 'basic_auth_users:\n  "a:b": "$2y$04$abcdefghijklmnopqrstuuKx3ObyKeVfnR8P2n2gP1xE4kZ0Wd1m6"\n');
    assert.throws(() => loadWebConfig(file), /basic_auth_users\.a:b: a user name cannot contain ":"/);
    writeFileSync(file, 'tls_server_config:\n  cert_file: s.crt\n  key_file: missing.key\n');
    assert.throws(() => loadWebConfig(file), /tls_server_config\.key_file: cannot read .*missing\.key/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
    rmSync(certs.dir, { recursive: true, force: true });
  }
});

/**
 * The password src/side/web-config.ts hashes for unknown users, so that an unknown user costs
 * one bcrypt compare like a known one. It is in the source, hence public.
 */
const DUMMY_PASSWORD = 'infermeter-unknown-user';

test('guard: 401 and a challenge unless the right user and password; replace() applies at once', async () => {
  const users = new Map([['alice', bcrypt.hashSync('right', 4)]]);
  const guard = new WebGuard({ file: 'web.yml', tls: null, users });
  const server = createServer((req, res) => void guard.admit(req, res).then((ok) => ok && res.end('ok')));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`;
  const get = async (authorization?: string) => {
    const res = await fetch(url, { headers: authorization ? { authorization } : {} });
    return { status: res.status, challenge: res.headers.get('www-authenticate'), body: await res.text() };
  };
  const basic = (s: string) => `Basic ${Buffer.from(s).toString('base64')}`;
  try {
    // DUMMY_PASSWORD is the password of the guard's built-in hash for unknown users: public, so it must open nothing.
    for (const auth of [undefined, 'Bearer x', 'Basic !!!', basic('alice'), basic('alice:wrong'), basic('bob:right'), basic('alice:right '), basic(`bob:${DUMMY_PASSWORD}`), basic(`alice:${DUMMY_PASSWORD}`)]) {
      const r = await get(auth);
      assert.equal(r.status, 401, String(auth));
      assert.equal(r.challenge, 'Basic realm="infermeter", charset="UTF-8"');
    }
    assert.equal((await get(basic('alice:right'))).body, 'ok');
    assert.equal((await get(basic('alice:right'))).body, 'ok', 'the cached verdict');
    guard.replace({ file: 'web.yml', tls: null, users: new Map([['alice', bcrypt.hashSync('new', 4)]]) });
    assert.equal((await get(basic('alice:right'))).status, 401, 'the old password, cached before, no longer passes');
    assert.equal((await get(basic('alice:new'))).body, 'ok');
    guard.replace(null);
    assert.equal((await get()).body, 'ok', 'no web config: open');
  } finally {
    server.closeAllConnections();
    server.close();
  }
});

/**
 * exporter-toolkit's client_auth_type, as Go's crypto/tls defines each (tls.ClientAuthType):
 * what a client without a certificate, with one from an unrelated CA, and with one from the
 * client CA gets. RequireAndVerifyClientCert is refused in the handshake; RequireAnyClientCert
 * and VerifyClientCertIfGiven are judged per request by the guard (403).
 */
const CLIENT_AUTH: [type: string, none: number | 'handshake', untrusted: number | 'handshake', trusted: number | 'handshake'][] = [
  ['NoClientCert', 200, 200, 200],
  ['RequestClientCert', 200, 200, 200],
  ['RequireAnyClientCert', 403, 200, 200],
  ['VerifyClientCertIfGiven', 200, 403, 200],
  ['RequireAndVerifyClientCert', 'handshake', 'handshake', 200],
];

test('guard: each client_auth_type against no client certificate, an untrusted one and a trusted one, on a real TLS listener', async () => {
  const certs = makeCerts();
  const other = makeCerts(); // its client certificate is signed by a CA the listener does not know
  const dir = mkdtempSync(join(tmpdir(), 'infermeter-web-'));
  const agents = {
    none: new Agent({ connect: { ca: certs.pem(certs.caCert) } }),
    untrusted: new Agent({ connect: { ca: certs.pem(certs.caCert), cert: other.pem(other.clientCert), key: other.pem(other.clientKey) } }),
    trusted: new Agent({ connect: { ca: certs.pem(certs.caCert), cert: certs.pem(certs.clientCert), key: certs.pem(certs.clientKey) } }),
  };
  try {
    for (const [type, ...want] of CLIENT_AUTH) {
      const file = join(dir, `${type}.yml`);
      // RequireAnyClientCert and RequestClientCert need no client CA; the test gives one wherever the type takes it.
      const ca = type === 'NoClientCert' || type === 'RequireAnyClientCert' ? '' : `  client_ca_file: ${certs.caCert}\n`;
      writeFileSync(file, `tls_server_config:\n  cert_file: ${certs.serverCert}\n  key_file: ${certs.serverKey}\n${ca}  client_auth_type: ${type}\n`);
      const web = loadWebConfig(file);
      assert.equal(web.tls?.clientAuth, type);
      const guard = new WebGuard(web);
      const server = createHttpsServer(listenerTlsOptions(web, { metricsTlsCert: '', metricsTlsKey: '' })!, (req, res) => void guard.admit(req, res).then((ok) => ok && res.end('ok')));
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`;
      try {
        const got: (number | 'handshake')[] = [];
        const bodies: string[] = [];
        for (const agent of [agents.none, agents.untrusted, agents.trusted]) {
          try {
            const res = await request(url, { dispatcher: agent });
            got.push(res.statusCode);
            bodies.push(await res.body.text());
          } catch {
            got.push('handshake');
            bodies.push('');
          }
        }
        assert.deepEqual(got, want, `${type}: no certificate, untrusted, trusted`);
        for (const [i, status] of got.entries()) {
          if (status === 403) assert.match(bodies[i]!, /client certificate/, `${type}: the 403 says why`);
          if (status === 200) assert.equal(bodies[i], 'ok');
        }
      } finally {
        server.closeAllConnections();
        server.close();
      }
    }
  } finally {
    await Promise.all(Object.values(agents).map((a) => a.close()));
    rmSync(dir, { recursive: true, force: true });
    rmSync(certs.dir, { recursive: true, force: true });
    rmSync(other.dir, { recursive: true, force: true });
  }
});

test('guard: the listener\'s TLS from the file over the shorthand flags (warned), and a reload: new files for the next handshake, a protocol change named for restart', async () => {
  const certs = makeCerts();
  const other = makeCerts();
  const dir = mkdtempSync(join(tmpdir(), 'infermeter-web-'));
  const warnings: string[] = [];
  const log = { warn: (_o: object, msg: string) => void warnings.push(msg) };
  const file = (name: string, cert: string, key: string) => {
    const f = join(dir, name);
    writeFileSync(f, `tls_server_config:\n  cert_file: ${cert}\n  key_file: ${key}\n`);
    return loadWebConfig(f);
  };
  const first = file('a.yml', certs.serverCert, certs.serverKey);
  const second = file('b.yml', other.serverCert, other.serverKey);
  const shorthand = { metricsTlsCert: other.serverCert, metricsTlsKey: other.serverKey };
  const guard = new WebGuard(first);
  try {
    const tls = guard.listenerTls(shorthand, log)!;
    assert.equal(tls.cert, certs.pem(certs.serverCert), 'the file wins');
    assert.deepEqual(warnings, ['--web.config.file has a tls_server_config: it wins over --metrics-tls-cert and --metrics-tls-key']);
    assert.equal(new WebGuard(null).listenerTls({ metricsTlsCert: '', metricsTlsKey: '' }, log), null);
    assert.equal(warnings.length, 1, 'no file, no warning');

    const server = createHttpsServer(tls, (req, res) => void guard.admit(req, res).then((ok) => ok && res.end('ok')));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`;
    // A fresh connection each time (no keep-alive), trusting both CAs: which certificate the listener shows.
    const issuer = async () => {
      const agent = new Agent({ connect: { ca: [certs.pem(certs.caCert), other.pem(other.caCert)] }, pipelining: 0 });
      try {
        const res = await request(url, { dispatcher: agent });
        await res.body.text();
        return res.statusCode;
      } finally {
        await agent.close();
      }
    };
    const shown = (ca: string) => new Promise<boolean>((resolve) => {
      const agent = new Agent({ connect: { ca } });
      request(url, { dispatcher: agent }).then(async (r) => (await r.body.text(), resolve(true)), () => resolve(false)).finally(() => void agent.close());
    });
    try {
      assert.equal(await issuer(), 200);
      assert.deepEqual([await shown(certs.pem(certs.caCert)), await shown(other.pem(other.caCert))], [true, false], 'the first certificate');
      const restart: string[] = [];
      guard.reload(second, server as never, shorthand, log, restart);
      assert.deepEqual(restart, [], 'same protocol: applied live');
      assert.deepEqual([await shown(certs.pem(certs.caCert)), await shown(other.pem(other.caCert))], [false, true], 'the new certificate at the next handshake');
      guard.reload({ file: 'c.yml', tls: null, users: new Map() }, server as never, shorthand, log, restart);
      assert.deepEqual(restart, ['--web.config.file tls_server_config'], 'removing TLS takes a restart');
      assert.ok(guard.config?.tls, 'the running TLS stays');
      assert.equal(guard.config?.file, 'c.yml');
      assert.match(warnings[warnings.length - 1]!, /keeps its protocol until restart/);
    } finally {
      server.closeAllConnections();
      server.close();
    }
    const plain = new WebGuard(null);
    const restart: string[] = [];
    plain.reload(first, null, shorthand, log, restart);
    assert.deepEqual(restart, ['--web.config.file tls_server_config'], 'adding TLS takes a restart');
    assert.equal(plain.config?.tls, null, 'and the listener stays plain until then');
    plain.reload(null, null, shorthand, log, (restart.length = 0, restart));
    assert.deepEqual([restart, plain.config], [[], null], 'plain to plain');
  } finally {
    rmSync(dir, { recursive: true, force: true });
    rmSync(certs.dir, { recursive: true, force: true });
    rmSync(other.dir, { recursive: true, force: true });
  }
});
