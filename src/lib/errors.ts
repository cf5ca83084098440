/**
 * Every error infermeter reports, in one table. Upstream failures follow the statuses
 * reverse proxies use (502/503/504, as @fastify/reply-from does) and answer clients with an OpenAI-shaped body,
 * so SDKs surface them like any other API error.
 */

export const ERRORS = {
  UPSTREAM_REFUSED: { status: 502, outcome: 'upstream_unreachable', type: 'upstream_refused', message: 'The inference server refused the connection.' },
  UPSTREAM_UNREACHABLE: { status: 503, outcome: 'upstream_unreachable', type: 'upstream_unreachable', message: 'The inference server cannot be reached.' },
  UPSTREAM_TIMEOUT: { status: 504, outcome: 'upstream_timeout', type: 'upstream_timeout', message: 'The inference server did not answer in time.' },
  UPSTREAM_TLS: { status: 502, outcome: 'upstream_unreachable', type: 'upstream_tls_error', message: 'The TLS handshake with the inference server failed.' },
  UPSTREAM_BROKEN: { status: 502, outcome: 'upstream_error', type: 'upstream_connection_error', message: 'The connection to the inference server failed before it answered.' },
  BODY_TOO_LARGE: { status: 413, outcome: 'rejected', type: 'request_too_large', message: 'The request body is larger than the configured limit.' },
  BAD_REQUEST: { status: 400, outcome: 'rejected', type: 'bad_request', message: 'The request could not be read.' },
  METHOD_NOT_ALLOWED: { status: 405, outcome: 'rejected', type: 'method_not_allowed', message: 'This HTTP method is not forwarded.' },
  SHUTTING_DOWN: { status: 503, outcome: 'rejected', type: 'shutting_down', message: 'infermeter is shutting down; retry on another instance.' },
} as const satisfies Record<string, { status: number; outcome: string; type: string; message: string }>;

export type ErrorCode = keyof typeof ERRORS;

export class InfermeterError extends Error {
  readonly code: ErrorCode;
  /** A fixed code appended to the client's message (the TLS error's name, never upstream text). */
  readonly detail: string | null;
  constructor(code: ErrorCode, options?: { cause?: unknown; detail?: string }) {
    super(ERRORS[code].message, options);
    this.name = 'InfermeterError';
    this.code = code;
    this.detail = options?.detail ?? null;
  }
  get status(): number {
    return ERRORS[this.code].status;
  }
  /** One of record.ts's OUTCOMES (record.ts checks that every value here is one). */
  get outcome(): (typeof ERRORS)[ErrorCode]['outcome'] {
    return ERRORS[this.code].outcome;
  }
  /** The body a client receives: the OpenAI error shape. */
  body(): string {
    const e = ERRORS[this.code];
    const message = this.detail ? `${e.message} (${this.detail})` : e.message;
    return JSON.stringify({ error: { message, type: e.type, code: e.status, param: null } });
  }
}

/** A configuration value that cannot be used; names the flag so the operator knows what to fix. */
export class ConfigError extends Error {
  readonly flag: string;
  constructor(flag: string, message: string, options?: { cause?: unknown }) {
    super(`${flag}: ${message}`, options);
    this.name = 'ConfigError';
    this.flag = flag;
  }
}

/**
 * A file a setting names that cannot be read (missing, no permission): a runtime failure of
 * the machine, not a usage error, so the command exits 1, not 2; it still names the flag.
 */
export class UnreadableFileError extends ConfigError {
  constructor(flag: string, message: string, options?: { cause?: unknown }) {
    super(flag, message, options);
    this.name = 'UnreadableFileError';
  }
}

const TIMEOUT_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ETIMEDOUT']);
const UNREACHABLE_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EHOSTDOWN']);
/** OpenSSL's and Node's names for a failed handshake or certificate check (wrong CA, mTLS refused, ...). */
const TLS_CODE = /^(ERR_TLS_|ERR_SSL_|UNABLE_TO_|CERT_|SELF_SIGNED_|DEPTH_ZERO_|HOSTNAME_MISMATCH|EPROTO$)/;

/** Maps an undici/socket error met before the response started to one coded error. */
export function upstreamError(err: unknown): InfermeterError {
  const code = errorCode(err);
  if (code === 'ECONNREFUSED') return new InfermeterError('UPSTREAM_REFUSED', { cause: err });
  if (UNREACHABLE_CODES.has(code)) return new InfermeterError('UPSTREAM_UNREACHABLE', { cause: err });
  if (TIMEOUT_CODES.has(code)) return new InfermeterError('UPSTREAM_TIMEOUT', { cause: err });
  if (TLS_CODE.test(code)) return new InfermeterError('UPSTREAM_TLS', { cause: err, detail: code });
  return new InfermeterError('UPSTREAM_BROKEN', { cause: err });
}

export function isTimeout(err: unknown): boolean {
  return TIMEOUT_CODES.has(errorCode(err));
}

/** undici wraps socket errors; the useful code may sit on the error or on its cause. */
export function errorCode(err: unknown): string {
  let e: unknown = err;
  for (let depth = 0; depth < 4 && e && typeof e === 'object'; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && code !== 'UND_ERR_SOCKET' && code !== 'UND_ERR') return code;
    if (code === 'UND_ERR_SOCKET' && !(e as { cause?: unknown }).cause) return code;
    e = (e as { cause?: unknown }).cause;
  }
  const top = (err as { code?: unknown } | null)?.code;
  return typeof top === 'string' ? top : 'UNKNOWN';
}
