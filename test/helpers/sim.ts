/** Small helpers shared by the simulator's tests: requests, and SSE bodies read the proxy's way. */
import { request } from 'undici';
import { eventFacts, type EventFacts } from '../../src/lib/events.js';
import { KEEP, SseFramer } from '../../src/lib/sse.js';

export interface SseEvent {
  data: string;
  /** null for [DONE] */
  doc: Record<string, any> | null;
  facts: EventFacts;
}

/** Frames a whole SSE body with the proxy's SseFramer and classifies each event with eventFacts. */
export function readEvents(body: string | Buffer): SseEvent[] {
  const out: SseEvent[] = [];
  const framer = new SseFramer(false, (buf, s, e) => {
    const data = buf.toString('utf8', s, e);
    const doc = data === '[DONE]' ? null : (JSON.parse(data) as Record<string, any>);
    out.push({ data, doc, facts: eventFacts(doc) });
    return KEEP;
  }, () => {
    throw new Error('oversized line');
  });
  framer.feed(Buffer.isBuffer(body) ? body : Buffer.from(body));
  framer.end();
  return out;
}

export async function post(url: string, body: unknown): Promise<{ status: number; text: string; headers: Record<string, unknown> }> {
  const res = await request(url, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
  return { status: res.statusCode, text: await res.body.text(), headers: res.headers };
}

export async function get(url: string): Promise<{ status: number; text: string }> {
  const res = await request(url);
  return { status: res.statusCode, text: await res.body.text() };
}

export function chat(content: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { messages: [{ role: 'user', content }], ...extra };
}

export async function waitFor(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 5000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
