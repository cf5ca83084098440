/**
 * --web.config.file: the Prometheus exporter-toolkit web configuration (the file node_exporter,
 * dcgm-exporter and Prometheus itself take), for the metrics listener. `tls_server_config`
 * makes it HTTPS (optionally requiring client certificates); `basic_auth_users` maps user
 * names to bcrypt hashes. Every endpoint but the kubelet probes (/healthz, /readyz) asks for
 * the credentials. Paths in the file are relative to the file, as in exporter-toolkit.
 *
 * A bad file is a ConfigError naming the file and the key, at startup and on reload (where
 * the running settings stay). Keys of the format that infermeter does not implement are
 * refused by name rather than ignored: a security setting must never be dropped silently.
 * The guard that applies it to requests is src/side/web-config.ts.
 */
import { readFileSync } from 'node:fs';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { dirname, resolve } from 'node:path';
import { createSecureContext, type SecureVersion } from 'node:tls';
import type { ServerOptions as HttpsOptions } from 'node:https';
import { createRequire } from 'node:module';
import { ConfigError } from './errors.js';

export const WEB_CONFIG_FLAG = '--web.config.file';

/** exporter-toolkit's client_auth_type values (Go's tls.ClientAuthType names). */
export const CLIENT_AUTH_TYPES = ['NoClientCert', 'RequestClientCert', 'RequireAnyClientCert', 'VerifyClientCertIfGiven', 'RequireAndVerifyClientCert'] as const;
export type ClientAuthType = (typeof CLIENT_AUTH_TYPES)[number];
const TLS_VERSIONS: Record<string, SecureVersion> = { TLS10: 'TLSv1', TLS11: 'TLSv1.1', TLS12: 'TLSv1.2', TLS13: 'TLSv1.3' };

export interface WebTls {
  cert: string;
  key: string;
  /** PEM of client_ca_file, '' when none. */
  clientCa: string;
  clientAuth: ClientAuthType;
  minVersion: SecureVersion;
  maxVersion: SecureVersion;
}

export interface WebConfig {
  file: string;
  tls: WebTls | null;
  /** user name -> bcrypt hash; empty: no authentication. */
  users: Map<string, string>;
}

/** The listener's own shorthand flags (--metrics-tls-cert/-key), used when the file has no tls_server_config. */
export interface TlsShorthand {
  metricsTlsCert: string;
  metricsTlsKey: string;
}

const TOP_KEYS = ['tls_server_config', 'basic_auth_users', 'http_server_config'];
const TLS_KEYS = ['cert_file', 'key_file', 'client_ca_file', 'client_auth_type', 'min_version', 'max_version'];
/** Keys of the format that infermeter refuses by name (Go-specific, or not implemented). */
const TLS_UNSUPPORTED = ['cert', 'key', 'client_ca', 'cipher_suites', 'curve_preferences', 'prefer_server_cipher_suites', 'client_allowed_sans'];

/** Reads and checks a web config file; throws ConfigError naming the file and key. */
export function loadWebConfig(file: string): WebConfig {
  const where = (key: string) => `${WEB_CONFIG_FLAG} ${file}: ${key}`;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(WEB_CONFIG_FLAG, `cannot read ${file}: ${(err as Error).message}`, { cause: err });
  }
  let doc: unknown;
  try {
    // Required here, not at the top: the metrics thread loads this file whether or not a web config is given.
    doc = (createRequire(import.meta.url)('yaml') as typeof import('yaml')).parse(text);
  } catch (err) {
    throw new ConfigError(WEB_CONFIG_FLAG, `${file} is not valid YAML: ${(err as Error).message}`, { cause: err });
  }
  doc ??= {};
  if (!isMapping(doc)) throw new ConfigError(WEB_CONFIG_FLAG, `${file} must hold a YAML mapping`);
  for (const k of Object.keys(doc)) if (!TOP_KEYS.includes(k)) throw new ConfigError(where(k), `unknown key (expected ${TOP_KEYS.join(', ')})`);
  if (doc['http_server_config'] !== undefined && doc['http_server_config'] !== null) {
    throw new ConfigError(where('http_server_config'), 'is not supported by infermeter (HTTP/2 and extra headers); remove it');
  }
  const base = dirname(resolve(file));
  return { file, tls: readTls(doc['tls_server_config'], base, where), users: readUsers(doc['basic_auth_users'], where) };
}

function readTls(raw: unknown, base: string, where: (key: string) => string): WebTls | null {
  if (raw === undefined || raw === null) return null;
  const key = (k: string) => where(`tls_server_config.${k}`);
  if (!isMapping(raw)) throw new ConfigError(where('tls_server_config'), 'expected a mapping');
  for (const k of Object.keys(raw)) {
    if (TLS_UNSUPPORTED.includes(k)) throw new ConfigError(key(k), 'is not supported by infermeter; use cert_file, key_file, client_ca_file, client_auth_type, min_version or max_version');
    if (!TLS_KEYS.includes(k)) throw new ConfigError(key(k), `unknown key (expected ${TLS_KEYS.join(', ')})`);
  }
  const text = (k: string): string => {
    const v = raw[k];
    if (v === undefined || v === null || v === '') return '';
    if (typeof v !== 'string') throw new ConfigError(key(k), `expected a string, got ${JSON.stringify(v)}`);
    return v;
  };
  const certPath = text('cert_file');
  const keyPath = text('key_file');
  if (!certPath) throw new ConfigError(key('cert_file'), 'is required in tls_server_config');
  if (!keyPath) throw new ConfigError(key('key_file'), 'is required in tls_server_config');
  const cert = pemFile(resolve(base, certPath), key('cert_file'), 'certificate');
  const pkey = pemFile(resolve(base, keyPath), key('key_file'), 'private key');
  try {
    createSecureContext({ cert, key: pkey });
  } catch (err) {
    throw new ConfigError(key('key_file'), `${keyPath} does not match cert_file ${certPath}: ${(err as Error).message}`, { cause: err });
  }
  const caPath = text('client_ca_file');
  const clientCa = caPath ? pemFile(resolve(base, caPath), key('client_ca_file'), 'certificate') : '';
  const authRaw = text('client_auth_type');
  if (authRaw && !(CLIENT_AUTH_TYPES as readonly string[]).includes(authRaw)) {
    throw new ConfigError(key('client_auth_type'), `expected one of ${CLIENT_AUTH_TYPES.join(', ')}, got "${authRaw}"`);
  }
  // As exporter-toolkit: a client CA without a type means verify every client.
  const clientAuth = (authRaw || (clientCa ? 'RequireAndVerifyClientCert' : 'NoClientCert')) as ClientAuthType;
  if ((clientAuth === 'VerifyClientCertIfGiven' || clientAuth === 'RequireAndVerifyClientCert') && !clientCa) {
    throw new ConfigError(key('client_ca_file'), `is required with client_auth_type ${clientAuth}`);
  }
  const version = (k: string, dflt: string): SecureVersion => {
    const v = text(k) || dflt;
    const out = TLS_VERSIONS[v];
    if (!out) throw new ConfigError(key(k), `expected one of ${Object.keys(TLS_VERSIONS).join(', ')}, got "${v}"`);
    return out;
  };
  const minVersion = version('min_version', 'TLS12');
  const maxVersion = version('max_version', 'TLS13');
  if (minVersion > maxVersion) throw new ConfigError(key('min_version'), `${text('min_version')} is above max_version ${text('max_version')}`);
  return { cert, key: pkey, clientCa, clientAuth, minVersion, maxVersion };
}

function readUsers(raw: unknown, where: (key: string) => string): Map<string, string> {
  const users = new Map<string, string>();
  if (raw === undefined || raw === null) return users;
  if (!isMapping(raw)) throw new ConfigError(where('basic_auth_users'), 'expected a mapping of user name to bcrypt hash');
  for (const [user, hash] of Object.entries(raw)) {
    const key = where(`basic_auth_users.${user}`);
    if (user.includes(':')) throw new ConfigError(key, 'a user name cannot contain ":" (HTTP basic auth)');
    // bcrypt: $2a$, $2b$ or $2y$ (htpasswd -B), a two-digit cost, 53 characters of salt and hash.
    if (typeof hash !== 'string' || !/^\$2[aby]\$\d\d\$[./A-Za-z0-9]{53}$/.test(hash)) {
      throw new ConfigError(key, 'expected a bcrypt hash such as $2y$10$... (htpasswd -nBC 10 USER); plain passwords are not accepted');
    }
    users.set(user, hash);
  }
  return users;
}

function pemFile(path: string, key: string, what: 'certificate' | 'private key'): string {
  let pem: string;
  try {
    pem = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(key, `cannot read ${path}: ${(err as Error).message}`, { cause: err });
  }
  try {
    if (what === 'certificate') new X509Certificate(pem);
    else createPrivateKey(pem);
  } catch (err) {
    throw new ConfigError(key, `${path} is not a PEM ${what}: ${(err as Error).message}`, { cause: err });
  }
  return pem;
}

function isMapping(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * node:https options of the listener: the web config's tls_server_config wins over the
 * --metrics-tls-* shorthands; null is plain HTTP.
 */
export function listenerTlsOptions(web: WebConfig | null, shorthand: TlsShorthand): HttpsOptions | null {
  const t = web?.tls;
  if (t) {
    const request = t.clientAuth !== 'NoClientCert';
    return {
      cert: t.cert, key: t.key, minVersion: t.minVersion, maxVersion: t.maxVersion,
      ...(t.clientCa ? { ca: t.clientCa } : {}),
      requestCert: request,
      // Only this type is refused in the handshake; the others are judged per request (checkClientCert).
      rejectUnauthorized: t.clientAuth === 'RequireAndVerifyClientCert',
    };
  }
  if (!shorthand.metricsTlsCert || !shorthand.metricsTlsKey) return null;
  return { cert: readFileSync(shorthand.metricsTlsCert, 'utf8'), key: readFileSync(shorthand.metricsTlsKey, 'utf8') };
}
