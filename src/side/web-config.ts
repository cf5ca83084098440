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
 */
import { readFileSync } from 'node:fs';
import { createHash, createPrivateKey, X509Certificate } from 'node:crypto';
import { dirname, resolve } from 'node:path';
import { createSecureContext, type SecureVersion } from 'node:tls';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Server as TlsServer, TLSSocket } from 'node:tls';
import type { ServerOptions as HttpsOptions } from 'node:https';
import bcrypt from 'bcryptjs';
import { parse as parseYaml } from 'yaml';
import { ConfigError } from '../lib/errors.js';

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
    doc = parseYaml(text);
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

interface Warner {
  warn(obj: object, msg: string): void;
}

/** A cached verdict per (user, password, hash): bcrypt costs tens of ms, a scrape comes every few seconds. */
const CACHE_MAX = 256;
/** Compared against when the user is unknown, so an unknown user takes as long as a wrong password. */
let dummyHash: string | null = null;
const dummy = (): string => (dummyHash ??= bcrypt.hashSync('infermeter-unknown-user', 10));

/**
 * The guard in front of the metrics listener's endpoints. Settings are replaced whole on reload.
 */
export class WebGuard {
  private verdicts = new Map<string, boolean>();

  constructor(private web: WebConfig | null) {}

  get config(): WebConfig | null {
    return this.web;
  }

  replace(web: WebConfig | null): void {
    this.web = web;
    this.verdicts = new Map();
  }

  /** The listener's request handler: the kubelet probes (/healthz, /readyz) stay open, the rest passes the guard first. */
  handler(serve: (req: IncomingMessage, res: ServerResponse) => Promise<void>): (req: IncomingMessage, res: ServerResponse) => void {
    return (req, res) => {
      const path = (req.url ?? '/').split('?')[0];
      if (path === '/healthz' || path === '/readyz') return void serve(req, res);
      void this.admit(req, res).then((ok) => {
        if (ok) return serve(req, res);
        req.resume(); // a body, if any, is not read
      });
    };
  }

  /** node:https options of the listener at start (null: plain HTTP); warns when the file's TLS overrides the shorthand flags. */
  listenerTls(shorthand: TlsShorthand, log: Warner): HttpsOptions | null {
    if (this.web?.tls && shorthand.metricsTlsCert) {
      log.warn({ file: this.web.file }, '--web.config.file has a tls_server_config: it wins over --metrics-tls-cert and --metrics-tls-key');
    }
    return listenerTlsOptions(this.web, shorthand);
  }

  /**
   * A re-read web config (reload): users and TLS files apply to the next request and
   * handshake; adding or removing tls_server_config changes the listener's protocol, which
   * takes a restart (named in restartNeeded; the running TLS stays).
   */
  reload(next: WebConfig | null, server: Server | null, shorthand: TlsShorthand, log: Warner, restartNeeded: string[]): void {
    const before = this.web;
    if (Boolean(before?.tls) !== Boolean(next?.tls)) {
      restartNeeded.push('--web.config.file tls_server_config');
      log.warn({}, 'config reload: tls_server_config was added or removed; the metrics listener keeps its protocol until restart');
      next = next ? { ...next, tls: before?.tls ?? null } : null;
    } else {
      const tls = listenerTlsOptions(next, shorthand);
      if (tls && server && 'setSecureContext' in server) {
        const https = server as unknown as TlsServer & { requestCert?: boolean; rejectUnauthorized?: boolean };
        https.setSecureContext(tls);
        // Read by node:tls for every new connection (tls.Server keeps them as fields).
        https.requestCert = Boolean(tls.requestCert);
        https.rejectUnauthorized = Boolean(tls.rejectUnauthorized);
      }
    }
    this.replace(next);
  }

  /**
   * Resolves true when the request may go on; otherwise it has answered it (401, or 403 for a
   * client certificate the TLS settings require and the handshake could not refuse).
   */
  async admit(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    const web = this.web;
    if (!web) return true;
    const certProblem = web.tls ? clientCertProblem(web.tls.clientAuth, req.socket as TLSSocket) : null;
    if (certProblem) {
      res.writeHead(403, { 'content-type': 'text/plain' }).end(`${certProblem}\n`);
      return false;
    }
    if (web.users.size === 0) return true;
    if (await this.authorized(web.users, req.headers.authorization)) return true;
    res.writeHead(401, { 'content-type': 'text/plain', 'www-authenticate': 'Basic realm="infermeter", charset="UTF-8"' }).end('Unauthorized\n');
    return false;
  }

  private async authorized(users: Map<string, string>, header: string | undefined): Promise<boolean> {
    const m = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header ?? '');
    if (!m) return false;
    const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) return false;
    const user = decoded.slice(0, colon);
    const hash = users.get(user);
    // The key is a digest: the cache never holds a password.
    const key = createHash('sha256').update(`${user}\0${decoded.slice(colon + 1)}\0${hash ?? ''}`).digest('base64');
    const cached = this.verdicts.get(key);
    if (cached !== undefined) return cached;
    const ok = (await bcrypt.compare(decoded.slice(colon + 1), hash ?? dummy())) && hash !== undefined;
    if (this.verdicts.size >= CACHE_MAX) this.verdicts.delete(this.verdicts.keys().next().value!);
    this.verdicts.set(key, ok);
    return ok;
  }
}

/** What a request's connection lacks under the client auth type, or null. */
function clientCertProblem(type: ClientAuthType, socket: TLSSocket): string | null {
  if (type === 'NoClientCert' || type === 'RequestClientCert' || type === 'RequireAndVerifyClientCert') return null;
  const given = typeof socket.getPeerCertificate === 'function' && Object.keys(socket.getPeerCertificate()).length > 0;
  if (type === 'RequireAnyClientCert') return given ? null : 'a client certificate is required';
  // VerifyClientCertIfGiven
  return given && !socket.authorized ? `the client certificate is not trusted: ${String(socket.authorizationError)}` : null;
}
