/**
 * Addresses that cannot work together, refused at start with the flags named: an upstream that
 * is infermeter's own --listen (every request would come back into the proxy, growing its
 * forwarding headers until a 431), and --metrics-listen on the --listen address.
 */
import { hostname } from 'node:os';
import { ConfigError } from '../lib/errors.js';
import type { HostPort } from '../lib/parse.js';
import { localPort } from '../lib/upstream-spec.js';

const ANY = new Set(['0.0.0.0', '::', '']);

function show(a: HostPort): string {
  return `${a.host.includes(':') ? `[${a.host}]` : a.host}:${a.port}`;
}

/** Two listeners that would take the same port: the same host, or either on every address. Port 0 is always free. */
function overlap(a: HostPort, b: HostPort): boolean {
  return a.port !== 0 && a.port === b.port && (a.host === b.host || ANY.has(a.host) || ANY.has(b.host));
}

export function checkAddressClashes(listen: HostPort, metricsListen: HostPort, upstreams: readonly { url: string }[], upstreamFlag: string): void {
  if (overlap(listen, metricsListen)) {
    throw new ConfigError('--metrics-listen', `${show(metricsListen)} is the proxy's --listen ${show(listen)}: give the metrics listener another port`);
  }
  if (listen.port === 0) return;
  const local = ANY.has(listen.host) || listen.host === 'localhost' || /^127\./.test(listen.host) || listen.host === '::1';
  if (!local) return;
  for (const u of upstreams) {
    if (localPort(u.url, [hostname()]) === listen.port) {
      throw new ConfigError(upstreamFlag, `${u.url} is infermeter's own --listen ${show(listen)}: requests would loop back into the proxy; point it at the inference server`);
    }
  }
}
