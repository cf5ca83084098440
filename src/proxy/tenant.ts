/**
 * The tenant of a request, as the proxy loop sees it: a header value (truncated) or a short
 * salted hash of the bearer token. The key itself never leaves this function: only the hash
 * goes into the request record. The metrics side bounds the value into a label
 * (src/breakdown/tenants.ts). Decided once at startup: no per-request `if (config.x)`.
 */
import { createHmac } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

export const TENANT_SOURCES = ['none', 'header', 'api-key'] as const;
export type TenantSource = (typeof TENANT_SOURCES)[number];

/** A header value longer than this is cut: the record's string stays small and bounded. */
export const MAX_TENANT_CHARS = 64;
/** Hex characters of the key's HMAC kept (48 bits: no collision among any realistic set of keys). */
export const KEY_HASH_CHARS = 12;
export type TenantReader = (headers: IncomingHttpHeaders) => string | null;

export interface TenantOptions {
  tenantFrom: TenantSource;
  tenantHeader: string;
  /** Never empty with api-key: --tenant-salt, or the random one kept in --state-dir (config.ts). */
  tenantSalt: string;
}

const none: TenantReader = () => null;

export function tenantReader(opts: TenantOptions): TenantReader {
  if (opts.tenantFrom === 'header') {
    const name = opts.tenantHeader.toLowerCase();
    return (headers) => {
      const v = headers[name];
      const s = Array.isArray(v) ? v[0] : v;
      if (s === undefined || s === '') return null;
      // Slicing a value that fits gives it back unchanged, so `true` or `>=` for `>` cannot be seen
      // (mutation testing: equivalent); the test spares the copy.
      return s.length > MAX_TENANT_CHARS ? s.slice(0, MAX_TENANT_CHARS) : s;
    };
  }
  if (opts.tenantFrom === 'api-key') {
    const salt = opts.tenantSalt;
    if (salt === '') throw new Error('tenantReader: api-key needs a salt (config.ts resolves one)');
    return (headers) => {
      // Anthropic clients send the key as x-api-key; OpenAI ones as a bearer token.
      const key = bearerToken(headers.authorization) ?? apiKeyHeader(headers['x-api-key']);
      return key === null ? null : keyHash(salt, key);
    };
  }
  return none;
}

/** `key-` and the first KEY_HASH_CHARS hex characters of HMAC-SHA256(salt, key). */
export function keyHash(salt: string, key: string): string {
  return 'key-' + createHmac('sha256', salt).update(key).digest('hex').slice(0, KEY_HASH_CHARS);
}

function apiKeyHeader(v: string | string[] | undefined): string | null {
  const s = Array.isArray(v) ? v[0] : v;
  if (s === undefined) return null;
  const t = s.trim();
  return t === '' ? null : t;
}

function bearerToken(authorization: string | undefined): string | null {
  // The regex would reject undefined (as "undefined") too (mutation testing: equivalent); this says it plainly.
  if (authorization === undefined) return null;
  const m = /^\s*bearer\s+(\S+)\s*$/i.exec(authorization);
  return m ? m[1]! : null;
}
