/**
 * What can be told about --upstream before the first request, at startup, without waiting
 * for it: a URL with a path is the common mistake (`http://host:8000/v1`), since every
 * request's own path (`/v1/chat/completions`) is appended to it, so every request would be a
 * 404. The model list and the engine it reveals are checked on the metrics side, where the
 * list is read (metrics/models.ts); nothing here blocks the proxy from starting.
 */
import type { Logger } from 'pino';

/** The warning for an upstream URL that carries a path, naming the fix; null when it has none. */
export function upstreamPathWarning(upstream: string): string | null {
  let url: URL;
  try {
    url = new URL(upstream);
  } catch {
    return null; // config.ts has refused it already
  }
  const path = url.pathname.replace(/\/+$/, '');
  if (path === '') return null;
  return `--upstream ${upstream} has a path (${path}): infermeter appends each request's own path to it, so a client's /v1/chat/completions goes to ${path}/v1/chat/completions, a 404 on most servers; use --upstream ${url.origin} (clients keep using /v1/...)`;
}

export function checkUpstreamAtStart(upstream: string, log: Logger): void {
  const warning = upstreamPathWarning(upstream);
  if (warning) log.warn({ upstream }, warning);
}
