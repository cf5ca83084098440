/**
 * The guard in front of the metrics listener: --web.config.file's basic auth (bcrypt, via
 * bcryptjs) and client-certificate rules on every endpoint but the kubelet probes, and the
 * listener's TLS at start and on reload. The file itself is read by src/lib/web-config.ts.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { ServerOptions as HttpsOptions } from 'node:https';
import type { Server as TlsServer, TLSSocket } from 'node:tls';
import bcrypt from 'bcryptjs';
import { listenerTlsOptions, type ClientAuthType, type TlsShorthand, type WebConfig } from '../lib/web-config.js';

export { loadWebConfig, type WebConfig } from '../lib/web-config.js';

/** A refused request's answer. */
export interface Denial {
  status: 401 | 403;
  headers: Record<string, string>;
  body: string;
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
    const denied = await this.deny(req);
    if (denied) res.writeHead(denied.status, denied.headers).end(denied.body);
    return denied === null;
  }

  /** Why the request may not go on, as the answer to give it; null when it may (side/listener.ts's hook). */
  async deny(req: IncomingMessage): Promise<Denial | null> {
    const web = this.web;
    if (!web) return null;
    const certProblem = web.tls ? clientCertProblem(web.tls.clientAuth, req.socket as TLSSocket) : null;
    if (certProblem) return { status: 403, headers: { 'content-type': 'text/plain' }, body: `${certProblem}\n` };
    if (web.users.size === 0) return null;
    if (await this.authorized(web.users, req.headers.authorization)) return null;
    return { status: 401, headers: { 'content-type': 'text/plain', 'www-authenticate': 'Basic realm="infermeter", charset="UTF-8"' }, body: 'Unauthorized\n' };
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
