/**
 * TLS settings from files: the upstream connection (CA, mTLS client certificate, skip-verify)
 * and the two listeners (node:https). The config holds paths only; each process reads the
 * files where it builds its pool or listener. resolveConfig checks every file once, so an
 * unreadable or invalid one stops startup naming its flag.
 */
import { readFileSync } from 'node:fs';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { createSecureContext, type ConnectionOptions } from 'node:tls';
import { ConfigError, UnreadableFileError } from './errors.js';
import { loadWebConfig } from './web-config.js';

/** The TLS settings, as paths ('' = unset); config.ts's Config carries them under these names. */
export interface UpstreamTlsFiles {
  upstream: string;
  upstreamCa: string;
  upstreamCert: string;
  upstreamKey: string;
  upstreamInsecureSkipVerify: boolean;
}
export interface TlsFiles extends UpstreamTlsFiles {
  /** --web.config.file ('' = none): checked with the other files (web-config.ts). */
  webConfigFile: string;
  tlsCert: string;
  tlsKey: string;
  metricsTlsCert: string;
  metricsTlsKey: string;
}

function read(path: string, flag: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new UnreadableFileError(flag, `cannot read ${path}: ${(err as Error).message}`, { cause: err });
  }
}

function certificate(path: string, flag: string): string {
  const pem = read(path, flag);
  try {
    new X509Certificate(pem);
  } catch (err) {
    throw new ConfigError(flag, `${path} is not a PEM certificate: ${(err as Error).message}`, { cause: err });
  }
  return pem;
}

function privateKey(path: string, flag: string): string {
  const pem = read(path, flag);
  try {
    createPrivateKey(pem);
  } catch (err) {
    throw new ConfigError(flag, `${path} is not a PEM private key: ${(err as Error).message}`, { cause: err });
  }
  return pem;
}

/** A certificate and its key, both or neither; they must belong together. */
function pair(cfg: TlsFiles, certKey: 'upstreamCert' | 'tlsCert' | 'metricsTlsCert', keyKey: 'upstreamKey' | 'tlsKey' | 'metricsTlsKey', certFlag: string, keyFlag: string): void {
  const certPath = cfg[certKey];
  const keyPath = cfg[keyKey];
  if (!certPath && !keyPath) return;
  if (!certPath) throw new ConfigError(certFlag, `is required with ${keyFlag}`);
  if (!keyPath) throw new ConfigError(keyFlag, `is required with ${certFlag}`);
  const cert = certificate(certPath, certFlag);
  const key = privateKey(keyPath, keyFlag);
  try {
    createSecureContext({ cert, key });
  } catch (err) {
    throw new ConfigError(keyFlag, `${keyPath} does not match ${certFlag} ${certPath}: ${(err as Error).message}`, { cause: err });
  }
}

export function checkTlsFiles(cfg: TlsFiles): void {
  if (cfg.webConfigFile) loadWebConfig(cfg.webConfigFile);
  if (cfg.upstreamCa) certificate(cfg.upstreamCa, '--upstream-ca');
  pair(cfg, 'upstreamCert', 'upstreamKey', '--upstream-cert', '--upstream-key');
  pair(cfg, 'tlsCert', 'tlsKey', '--tls-cert', '--tls-key');
  pair(cfg, 'metricsTlsCert', 'metricsTlsKey', '--metrics-tls-cert', '--metrics-tls-key');
  const https = cfg.upstream?.startsWith('https:');
  const used = cfg.upstreamCa ? '--upstream-ca' : cfg.upstreamCert ? '--upstream-cert' : cfg.upstreamInsecureSkipVerify ? '--upstream-insecure-skip-verify' : null;
  if (used && cfg.upstream && !https) throw new ConfigError(used, `applies to an https upstream only; --upstream is ${cfg.upstream}`);
}

/** The TLS options of every connection to the upstream (undici's `connect`); undefined for plain http. */
export function upstreamConnectOptions(cfg: UpstreamTlsFiles): ConnectionOptions | undefined {
  if (!cfg.upstream.startsWith('https:')) return undefined;
  const out: ConnectionOptions = {};
  if (cfg.upstreamCa) out.ca = readFileSync(cfg.upstreamCa, 'utf8');
  if (cfg.upstreamCert) {
    out.cert = readFileSync(cfg.upstreamCert, 'utf8');
    out.key = readFileSync(cfg.upstreamKey, 'utf8');
  }
  if (cfg.upstreamInsecureSkipVerify) out.rejectUnauthorized = false;
  return out;
}

/** Certificate and key of a listener, or null for plain HTTP. */
export function listenerTls(cert: string, key: string): { cert: string; key: string } | null {
  if (!cert || !key) return null;
  return { cert: readFileSync(cert, 'utf8'), key: readFileSync(key, 'utf8') };
}
