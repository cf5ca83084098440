/** Small pure parsers for option values. Each throws an Error whose message says what was expected. */
import ms from 'ms';

export interface HostPort {
  host: string;
  port: number;
}

/** "HOST:PORT", ":PORT", "PORT" or "[::1]:PORT". */
export function parseHostPort(value: string, defaultHost = '0.0.0.0'): HostPort {
  const v = value.trim();
  let host = defaultHost;
  let portText = v;
  const v6 = /^\[([^\]]+)\]:(\d+)$/.exec(v);
  if (v6) {
    host = v6[1]!;
    portText = v6[2]!;
  } else if (v.includes(':')) {
    const i = v.lastIndexOf(':');
    host = v.slice(0, i) || defaultHost;
    portText = v.slice(i + 1);
  }
  if (!/^\d+$/.test(portText)) throw new Error(`expected HOST:PORT (e.g. 0.0.0.0:8080), got "${value}"`);
  const port = Number(portText);
  if (port > 65535) throw new Error(`port must be 0-65535, got ${port}`);
  return { host, port };
}

/** An http(s) URL with a host; returns it normalized without a trailing slash. */
export function parseHttpUrl(value: string): string {
  let u: URL;
  try {
    u = new URL(value.trim());
  } catch {
    throw new Error(`expected an http(s) URL such as http://127.0.0.1:8000, got "${value}"`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error(`expected an http or https URL, got protocol "${u.protocol}"`);
  if (u.search || u.hash) throw new Error(`the URL must not carry a query or fragment, got "${value}"`);
  return u.origin + u.pathname.replace(/\/+$/, '');
}

/** "500ms", "2s", "5m", "1h" or a bare number of seconds; returns seconds. */
/** A duration within [min, max] seconds. */
export function parseBoundedDuration(v: string, min: number, max: number): number {
  const s = parseDuration(v);
  if (!(s >= min && s <= max)) throw new Error(`expected a duration from ${min}s to ${max}s, got "${v}"`);
  return s;
}

export function parseDuration(value: string | number): number {
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || value < 0) throw new Error(`expected a non-negative duration, got ${value}`);
    return value;
  }
  const v = value.trim();
  if (/^\d+(\.\d+)?$/.test(v)) return Number(v);
  // ms() throws its own "val is not a non-empty string" on ''; every bad value gets ours.
  const msValue = v === '' ? undefined : ms(v as ms.StringValue);
  if (typeof msValue !== 'number' || !Number.isFinite(msValue) || msValue < 0) {
    throw new Error(`expected a duration such as 500ms, 2s, 5m, got "${value}"`);
  }
  return msValue / 1000;
}

const SIZE_UNITS: Record<string, number> = { '': 1, b: 1, kb: 1e3, k: 1e3, mb: 1e6, m: 1e6, gb: 1e9, g: 1e9, kib: 1024, mib: 1024 ** 2, gib: 1024 ** 3 };

/** "32mb", "64KiB", "1000"; returns bytes. */
export function parseSize(value: string | number): number {
  if (typeof value === 'number') return value;
  const m = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/i.exec(value.trim());
  const unit = m ? SIZE_UNITS[m[2]!.toLowerCase()] : undefined;
  if (!m || unit === undefined) throw new Error(`expected a size such as 32mb or 64KiB, got "${value}"`);
  return Math.round(Number(m[1]) * unit);
}

export function parseBool(value: string | boolean): boolean {
  if (typeof value === 'boolean') return value;
  const v = value.trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(v)) return true;
  if (['false', '0', 'no', 'off'].includes(v)) return false;
  throw new Error(`expected true or false, got "${value}"`);
}

export function parsePositiveInt(value: string | number): number {
  const n = typeof value === 'number' ? value : Number(value.trim());
  if (!Number.isInteger(n) || n <= 0) throw new Error(`expected a positive integer, got "${value}"`);
  return n;
}

/** A whole number, 0 included (0 usually meaning "not set"). */
export function parseWholeNumber(value: string): number {
  const n = Number(value.trim());
  if (value.trim() === '' || !Number.isSafeInteger(n) || n < 0) throw new Error(`expected a whole number (0 or more), got "${value}"`);
  return n;
}

export function parseList(value: string | string[]): string[] {
  const items = Array.isArray(value) ? value : value.split(',');
  return items.map((s) => String(s).trim()).filter((s) => s.length > 0);
}

export function oneOf<T extends string>(choices: readonly T[]) {
  return (value: string): T => {
    const v = value.trim() as T;
    if (!choices.includes(v)) throw new Error(`expected one of ${choices.join(', ')}, got "${value}"`);
    return v;
  };
}

// Value parsers of the flag table (config.ts), kept here with the others.

export function positiveDuration(v: string): number {
  const s = parseDuration(v);
  if (!(s > 0)) throw new Error(`expected a duration above 0 such as 10s, got "${v}"`);
  return s;
}

export function boundedInt(value: string, min: number, max: number): number {
  const n = parsePositiveInt(value);
  if (n < min || n > max) throw new Error(`expected a whole number from ${min} to ${max}, got "${value}"`);
  return n;
}

export function parseBucketFactor(value: string): number {
  const f = Number(value.trim());
  if (!(f > 1) || !Number.isFinite(f)) throw new Error(`expected a number above 1 such as 1.1, got "${value}"`);
  return f;
}

export function parseHeaderName(v: string): string {
  if (v !== '' && !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(v)) throw new Error(`expected an HTTP header name such as x-tenant-id, got "${v}"`);
  return v.toLowerCase();
}

export function nonEmpty(v: string): string {
  if (v.trim() === '') throw new Error('must not be empty');
  return v;
}

export function dmonLetters(v: string): string {
  if (!/^[pucvmet]+$/.test(v)) throw new Error(`expected letters from "pucvmet" (nvidia-smi dmon -s), got "${v}"`);
  return v;
}

/** A price: a number, 0 or more (0: none). */
export function parsePrice(v: string): number {
  const n = Number(v.trim());
  if (v.trim() === '' || !Number.isFinite(n)) throw new Error(`expected a price such as 2.5, got "${v}"`);
  if (n < 0) throw new Error(`a price cannot be negative, got "${v}"`);
  return n;
}

/** A rate per second, 0 or more. */
export function parseRate(v: string): number {
  const n = Number(v.trim());
  if (v.trim() === '' || !Number.isFinite(n) || n < 0) throw new Error(`expected a number of tokens per second such as 10000 (0: none), got "${v}"`);
  return n;
}

/** A currency label (ISO 4217 code or any short name: USD, EUR, credits); '' only when no price is set (config/check.ts). */
export function parseCurrency(v: string): string {
  const t = v.trim();
  if (t !== '' && !/^[A-Za-z][A-Za-z0-9_.-]{0,15}$/.test(t)) throw new Error(`expected a currency code such as USD or EUR (letters, at most 16), got "${v}"`);
  return t;
}

export function wholeSeconds(v: string): number {
  const s = parseDuration(v);
  if (s < 1 || !Number.isInteger(s)) throw new Error(`nvidia-smi dmon samples in whole seconds (>= 1s), got "${v}"`);
  return s;
}

/** A share from 0 (excluded) to 1, e.g. 0.25. */
export function parseRatio(v: string): number {
  const r = Number(v.trim());
  if (!(r > 0 && r <= 1)) throw new Error(`expected a ratio above 0 and at most 1 such as 0.25, got "${v}"`);
  return r;
}

export function positiveNumber(v: string): number {
  const n = Number(v.trim());
  if (!(n > 0) || !Number.isFinite(n)) throw new Error(`expected a number above 0 such as 4 or 3.5, got "${v}"`);
  return n;
}
