/**
 * Which requests hand their body to the metrics side (record/input.ts), decided once at
 * startup: only while a reader of prompt shapes is on (the workload trace, the prefix-cache model). The proxy loop
 * keeps a reference to the body it buffered anyway and reads one header; it parses nothing,
 * hashes nothing and copies nothing here (the sink copies each body once per batch).
 */
import type { IncomingHttpHeaders } from 'node:http';
import { MAX_SESSION_CHARS, type RequestInput } from '../record/input.js';

export interface InputOptions {
  /** The workload trace's file ('' = off): docs/workload-trace.md. */
  workloadTrace: string;
  /** --prefix-cache: the live prefix-cache model reads prompt shapes too. */
  prefixCache: boolean;
  /** Request header whose value names the session ('' = none). */
  workloadTraceSessionHeader: string;
}

export type InputReader = (headers: IncomingHttpHeaders, body: Buffer) => RequestInput;

/** null when no reader of prompt shapes is on: the exchange then keeps nothing. */
export function inputReader(opts: InputOptions): InputReader | null {
  if (opts.workloadTrace === '' && !opts.prefixCache) return null;
  const name = opts.workloadTraceSessionHeader.toLowerCase();
  if (name === '') return (_headers, body) => ({ body, session: null });
  return (headers, body) => {
    const v = headers[name];
    const s = Array.isArray(v) ? v[0] : v;
    return { body, session: s === undefined || s === '' ? null : s.slice(0, MAX_SESSION_CHARS) };
  };
}
