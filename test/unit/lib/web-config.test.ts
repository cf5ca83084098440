/**
 * --web.config.file's loader (src/lib/web-config.ts), every refusal naming the file and the
 * key (README: "a bad file stops startup naming file and key"), the exporter-toolkit values
 * (TLS10..TLS13, the five client_auth_type names, bcrypt $2a$/$2b$/$2y$ hashes), and the
 * listener's node:https options for each client auth type and for the shorthand flags.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { listenerTlsOptions, loadWebConfig } from '../../../src/lib/web-config.js';
import { makeCerts } from '../../fakes/certs.js';

/** A bcrypt hash as htpasswd -nB writes it: $2y$, cost, 53 characters of salt and hash. */
const HASH = '$2y$04$abcdefghijklmnopqrstuuKx3ObyKeVfnR8P2n2gP1xE4kZ0Wd1m6';

test('every refusal names the file and the key', () => {
  const certs = makeCerts();
  const dir = mkdtempSync(join(tmpdir(), 'infermeter-webcfg-unit-'));
  const junk = join(dir, 'junk.pem');
  writeFileSync(junk, 'not pem\n');
  const tls = (extra: string) => `tls_server_config:\n  cert_file: ${certs.serverCert}\n  key_file: ${certs.serverKey}\n${extra}`;
  const cases: [text: string, key: string, why: RegExp][] = [
    ['a: [', '', /is not valid YAML/],
    ['- a\n', '', /must hold a YAML mapping/],
    ['basic_auth: {}\n', ': basic_auth', /unknown key \(expected tls_server_config, basic_auth_users, http_server_config\)/],
    ['http_server_config:\n  http2: true\n', ': http_server_config', /is not supported by infermeter/],
    ['tls_server_config: yes\n', ': tls_server_config', /expected a mapping/],
    [tls('  cipher_suites: [TLS_AES_128_GCM_SHA256]\n'), ': tls_server_config.cipher_suites', /is not supported by infermeter/],
    [tls('  client_allowed_sans: [a]\n'), ': tls_server_config.client_allowed_sans', /is not supported by infermeter/],
    [tls('  curve: x\n'), ': tls_server_config.curve', /unknown key/],
    [`tls_server_config:\n  key_file: ${certs.serverKey}\n`, ': tls_server_config.cert_file', /is required/],
    [`tls_server_config:\n  cert_file: ${certs.serverCert}\n`, ': tls_server_config.key_file', /is required/],
    [`tls_server_config:\n  cert_file: 5\n  key_file: ${certs.serverKey}\n`, ': tls_server_config.cert_file', /expected a string, got 5/],
    [`tls_server_config:\n  cert_file: ${junk}\n  key_file: ${certs.serverKey}\n`, ': tls_server_config.cert_file', /is not a PEM certificate/],
    [`tls_server_config:\n  cert_file: ${certs.serverCert}\n  key_file: ${junk}\n`, ': tls_server_config.key_file', /is not a PEM private key/],
    [`tls_server_config:\n  cert_file: ${certs.serverCert}\n  key_file: ${certs.clientKey}\n`, ': tls_server_config.key_file', /does not match cert_file/],
    [`tls_server_config:\n  cert_file: ${certs.serverCert}\n  key_file: ${join(dir, 'missing.key')}\n`, ': tls_server_config.key_file', /cannot read/],
    [tls(`  client_ca_file: ${junk}\n`), ': tls_server_config.client_ca_file', /is not a PEM certificate/],
    [tls('  client_auth_type: Sometimes\n'), ': tls_server_config.client_auth_type', /expected one of NoClientCert, RequestClientCert, RequireAnyClientCert, VerifyClientCertIfGiven, RequireAndVerifyClientCert, got "Sometimes"/],
    [tls('  client_auth_type: VerifyClientCertIfGiven\n'), ': tls_server_config.client_ca_file', /is required with client_auth_type VerifyClientCertIfGiven/],
    [tls('  client_auth_type: RequireAndVerifyClientCert\n'), ': tls_server_config.client_ca_file', /is required with client_auth_type RequireAndVerifyClientCert/],
    [tls('  min_version: TLS9\n'), ': tls_server_config.min_version', /expected one of TLS10, TLS11, TLS12, TLS13, got "TLS9"/],
    [tls('  max_version: SSL3\n'), ': tls_server_config.max_version', /expected one of/],
    [tls('  min_version: TLS13\n  max_version: TLS12\n'), ': tls_server_config.min_version', /TLS13 is above max_version TLS12/],
    ['basic_auth_users: [alice]\n', ': basic_auth_users', /expected a mapping of user name to bcrypt hash/],
    ['basic_auth_users:\n  alice: secret\n', ': basic_auth_users.alice', /expected a bcrypt hash/],
    [`basic_auth_users:\n  alice: "${HASH.replace('$2y$', '$2x$')}"\n`, ': basic_auth_users.alice', /expected a bcrypt hash/],
    [`basic_auth_users:\n  alice: "${HASH.slice(0, -1)}"\n`, ': basic_auth_users.alice', /expected a bcrypt hash/],
    [`basic_auth_users:\n  alice: "x${HASH}"\n`, ': basic_auth_users.alice', /expected a bcrypt hash/],
    ['basic_auth_users:\n  alice: 12\n', ': basic_auth_users.alice', /expected a bcrypt hash/],
  ];
  try {
    for (const [i, [text, key, why]] of cases.entries()) {
      const file = join(dir, `bad-${i}.yml`);
      writeFileSync(file, text);
      assert.throws(() => loadWebConfig(file), (err: Error) => {
        assert.ok(err.message.startsWith(`--web.config.file ${file}${key}`) || (key === '' && err.message.includes(`${file}`)), `${err.message} names ${file}${key}`);
        assert.match(err.message, why);
        return true;
      }, text);
    }
    assert.throws(() => loadWebConfig(join(dir, 'absent.yml')), (err: Error) => /^--web\.config\.file: cannot read .*absent\.yml/.test(err.message));
  } finally {
    rmSync(dir, { recursive: true, force: true });
    rmSync(certs.dir, { recursive: true, force: true });
  }
});

test('exporter-toolkit values: TLS versions, every bcrypt prefix, client auth and the listener options it gives', () => {
  const certs = makeCerts();
  const dir = mkdtempSync(join(tmpdir(), 'infermeter-webcfg-unit-'));
  const file = join(dir, 'web.yml');
  const load = (text: string) => {
    writeFileSync(file, text);
    return loadWebConfig(file);
  };
  const shorthand = { metricsTlsCert: '', metricsTlsKey: '' };
  try {
    const base = `tls_server_config:\n  cert_file: ${certs.serverCert}\n  key_file: ${certs.serverKey}\n`;
    for (const [min, max, want] of [['TLS10', 'TLS11', ['TLSv1', 'TLSv1.1']], ['TLS12', 'TLS13', ['TLSv1.2', 'TLSv1.3']], ['TLS13', 'TLS13', ['TLSv1.3', 'TLSv1.3']]] as const) {
      const t = load(`${base}  min_version: ${min}\n  max_version: ${max}\n`).tls!;
      assert.deepEqual([t.minVersion, t.maxVersion], want, `${min}..${max}`);
    }
    const plain = load(base);
    assert.deepEqual([plain.tls!.minVersion, plain.tls!.maxVersion, plain.tls!.clientAuth, plain.tls!.clientCa], ['TLSv1.2', 'TLSv1.3', 'NoClientCert', ''], 'exporter-toolkit defaults');
    assert.match(plain.tls!.cert, /BEGIN CERTIFICATE/);
    assert.match(plain.tls!.key, /PRIVATE KEY/);
    const none = listenerTlsOptions(plain, shorthand)!;
    assert.deepEqual([none.requestCert, none.rejectUnauthorized, 'ca' in none, none.minVersion, none.maxVersion], [false, false, false, 'TLSv1.2', 'TLSv1.3']);
    // Only RequireAndVerifyClientCert is refused in the handshake; every other type but NoClientCert asks for a certificate.
    for (const [type, request, reject] of [['RequestClientCert', true, false], ['RequireAnyClientCert', true, false], ['VerifyClientCertIfGiven', true, false], ['RequireAndVerifyClientCert', true, true]] as const) {
      const web = load(`${base}  client_ca_file: ${certs.caCert}\n  client_auth_type: ${type}\n`);
      assert.equal(web.tls!.clientAuth, type);
      const o = listenerTlsOptions(web, { metricsTlsCert: certs.clientCert, metricsTlsKey: certs.clientKey })!;
      assert.deepEqual([o.requestCert, o.rejectUnauthorized], [request, reject], type);
      assert.match(String(o.ca), /BEGIN CERTIFICATE/, `${type}: the client CA`);
      assert.equal(o.cert, web.tls!.cert, `${type}: the file's certificate wins over the shorthand flags`);
    }
    const users = load(`basic_auth_users:\n  a: "${HASH}"\n  b: "${HASH.replace('$2y$', '$2a$')}"\n  c: "${HASH.replace('$2y$', '$2b$')}"\n`).users;
    assert.deepEqual([...users], [['a', HASH], ['b', HASH.replace('$2y$', '$2a$')], ['c', HASH.replace('$2y$', '$2b$')]]);
    const empty = load('tls_server_config:\nbasic_auth_users:\nhttp_server_config:\n');
    assert.deepEqual([empty.tls, empty.users.size, empty.file], [null, 0, file], 'null sections are no sections');
    // No tls_server_config: the shorthand flags, both or nothing.
    assert.deepEqual(listenerTlsOptions(empty, { metricsTlsCert: certs.serverCert, metricsTlsKey: certs.serverKey }), { cert: certs.pem(certs.serverCert), key: certs.pem(certs.serverKey) });
    assert.equal(listenerTlsOptions(empty, { metricsTlsCert: certs.serverCert, metricsTlsKey: '' }), null);
    assert.equal(listenerTlsOptions(null, { metricsTlsCert: '', metricsTlsKey: certs.serverKey }), null);
  } finally {
    rmSync(dir, { recursive: true, force: true });
    rmSync(certs.dir, { recursive: true, force: true });
  }
});
