/** Header handling for a transparent proxy (RFC 9110 §7.6.1 hop-by-hop fields). */
import type { IncomingHttpHeaders } from 'node:http';

const HOP_BY_HOP = new Set([
  'connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'proxy-authorization',
  'te', 'trailer', 'transfer-encoding', 'upgrade', 'host',
  // undici does not support Expect: 100-continue; Node already answered the client.
  'expect',
]);

function connectionTokens(value: string | string[] | undefined): Set<string> | null {
  // Nearly every request and response says just one of these: no tokens to drop, nothing to allocate.
  if (!value || value === 'keep-alive' || value === 'close' || value === 'Keep-Alive' || value === 'Close') return null;
  const text = Array.isArray(value) ? value.join(',') : value;
  const tokens = text.split(',').map((t) => t.trim().toLowerCase()).filter((t) => t && t !== 'close' && t !== 'keep-alive');
  return tokens.length ? new Set(tokens) : null;
}

/** Client request headers → upstream request headers. */
export function upstreamRequestHeaders(
  headers: IncomingHttpHeaders,
  clientIp: string | undefined,
  bodyLength: number | null,
): Record<string, string | string[]> {
  const extra = connectionTokens(headers['connection']);
  const out: Record<string, string | string[]> = {};
  for (const name in headers) {
    const v = headers[name];
    if (v === undefined || HOP_BY_HOP.has(name) || extra?.has(name)) continue;
    out[name] = v;
  }
  if (bodyLength !== null) out['content-length'] = String(bodyLength);
  if (clientIp) {
    const prior = headers['x-forwarded-for'];
    out['x-forwarded-for'] = prior ? `${Array.isArray(prior) ? prior.join(', ') : prior}, ${clientIp}` : clientIp;
  }
  return out;
}

/** Upstream response headers → client response headers. */
export function clientResponseHeaders(
  headers: Record<string, string | string[] | undefined>,
  dropContentLength: boolean,
): Record<string, string | string[]> {
  const extra = connectionTokens(headers['connection']);
  const out: Record<string, string | string[]> = {};
  for (const name in headers) {
    const v = headers[name];
    if (v === undefined || HOP_BY_HOP.has(name) || extra?.has(name)) continue;
    if (dropContentLength && name === 'content-length') continue;
    out[name] = v;
  }
  return out;
}

export function headerValue(v: string | string[] | undefined): string {
  return Array.isArray(v) ? (v[0] ?? '') : (v ?? '');
}
